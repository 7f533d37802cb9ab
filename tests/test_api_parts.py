"""Parts of the crawl-job API tested without a server: its keys come from the environment
(TRAWL_API_KEYS) or a file (api.keys.file), so that no secret needs the command line (ps,
shell history), and a server without any refuses to start, saying where they go; its
statistics count hosts and registered domains."""

import os
import subprocess
import sys

import pytest

from api.auth import KEYS_VARIABLE, KeysFileError, api_keys
from lib.config import load_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_keys_of_the_three_places_are_accepted_once_each(tmp_path, monkeypatch):
    keys = tmp_path / "keys"
    keys.write_text("# ops team\nfile-key\n\n  spaced-key  \nshared\n")
    monkeypatch.setenv(KEYS_VARIABLE, "env-key, shared,")
    conf = load_config(overrides=["api.keys=conf-key", f"api.keys.file={keys}"])
    assert api_keys(conf) == ["conf-key", "file-key", "spaced-key", "shared", "env-key"]


def test_an_unreadable_keys_file_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv(KEYS_VARIABLE, raising=False)
    conf = load_config(overrides=[f"api.keys.file={tmp_path / 'missing'}"])
    with pytest.raises(KeysFileError, match=f"api.keys.file {tmp_path / 'missing'}: No such"):
        api_keys(conf)


def test_a_server_without_keys_refuses_to_start_naming_where_they_go(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != KEYS_VARIABLE}
    env["PYTHONPATH"] = ROOT
    done = subprocess.run(
        [sys.executable, "-m", "api.server", "--data", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "api: no API key configured: set TRAWL_API_KEYS=KEY1,KEY2 in the environment,"
        " or api.keys.file to a file of keys"
    )


def test_stats_count_hosts_and_registered_domains(tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    from api.tables import ApiTables
    from engine.runtime.layout import DataDir

    hosts = ["www.a.co.uk", "www.a.co.uk", "shop.a.co.uk", "b.org", "127.0.0.1"]
    statuses = ["fetched", "unfetched", "fetched", "gone", "fetched"]
    write_deltalake(str(tmp_path / "crawldb"), pa.table({"host": hosts, "status": statuses}))
    tables = ApiTables(DataDir.at(str(tmp_path), load_config()))
    assert tables.crawldb_sites(10, "host") == [
        {"host": "www.a.co.uk", "urls": 2, "fetched": 1},
        {"host": "127.0.0.1", "urls": 1, "fetched": 1},
        {"host": "b.org", "urls": 1, "fetched": 0},
        {"host": "shop.a.co.uk", "urls": 1, "fetched": 1},
    ]
    assert tables.crawldb_sites(2, "domain") == [
        {"domain": "a.co.uk", "urls": 3, "fetched": 2, "hosts": 2},
        {"domain": "127.0.0.1", "urls": 1, "fetched": 1, "hosts": 1},
    ]
