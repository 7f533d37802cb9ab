"""The code base stays clean by ruff's rules (pyproject.toml), as part of the test suite."""

import subprocess
import sys

from conftest import ROOT


def test_ruff_finds_nothing():
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
