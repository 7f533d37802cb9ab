"""docs/configuration.md is what scripts/config_reference.py makes of the defaults file,
and lists every key with its default."""

import subprocess
import sys
import tomllib

from conftest import ROOT


def test_the_configuration_reference_is_current():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "config_reference.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_every_key_is_in_the_reference_with_its_default():
    defaults = tomllib.loads((ROOT / "conf" / "trawl-default.toml").read_text())
    reference = (ROOT / "docs" / "configuration.md").read_text()
    for key in defaults:
        assert f"### `{key}`" in reference, key
    assert 'Default `"Trawl"`. Product token' in reference
