"""A crawl's health, seen as Prometheus and a person see it, after the three-round crawl:
the API's /metrics parses as Prometheus text (prometheus_client's own parser) and gives
the crawldb's counts exactly, behind the API's key; headless Chromium renders
/dashboard with the crawldb's counts and its charts; ``metrics.textfile`` is written
after a round."""

import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import requests
from conftest import ROOT
from crawlruns import AGENT, web_crawl_args
from deltalake import DeltaTable
from prometheus_client.parser import text_string_to_metric_families
from servers import api_server

from jobs import crawl

pytestmark = [pytest.mark.spark, pytest.mark.web]
KEY = "health-test-key"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# As the machine's notes advise: no background connections of Chromium's own.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def api(crawled, tmp_path_factory):
    """The API served over a copy of the crawl's data directory: its base URL."""
    data, _, _ = crawled
    folder = tmp_path_factory.mktemp("health")
    shutil.copytree(data.root, folder / "data")
    with api_server(folder / "data", folder / "api.log", env={"TRAWL_API_KEYS": KEY}) as base:
        yield base


def families(text: str) -> dict:
    """name -> {labels tuple: value} of Prometheus text."""
    found = {}
    for family in text_string_to_metric_families(text):
        found[family.name] = {
            tuple(sorted(sample.labels.items())): sample.value for sample in family.samples
        }
    return found


def test_metrics_give_the_crawldb_s_counts_behind_the_key(api, crawled):
    _, rows, _ = crawled
    assert requests.get(f"{api}/metrics", timeout=30).status_code == 401
    wrong = {"Authorization": "Bearer not-the-key"}
    assert requests.get(f"{api}/metrics", headers=wrong, timeout=30).status_code == 401
    answer = requests.get(f"{api}/metrics", headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    found = families(answer.text)
    assert len([name for name in found if name.startswith("trawl_")]) >= 10
    assert found["trawl_crawldb_all_urls"] == {(): len(rows)}
    statuses = Counter(row["status"] for row in rows)
    by_status = {
        dict(labels)["status"]: value for labels, value in found["trawl_crawldb_urls"].items()
    }
    assert {s: v for s, v in by_status.items() if v} == dict(statuses)
    assert found["trawl_fetch_pages"][()] > 0
    assert found["trawl_last_round_finished_timestamp_seconds"][()] > time.time() - 3600
    assert sum(found["trawl_robots_answers"].values()) >= 2  # the two seeds' hosts
    assert found["trawl_data_directory_bytes"][()] > 0
    data = crawled[0]
    hosts = DeltaTable(data.hostdb).to_pyarrow_table(columns=["held_back", "circuit_open"])
    held = {dict(labels)["state"]: value for labels, value in found["trawl_hosts_held"].items()}
    assert held["held_back"] == sum(1 for n in hosts["held_back"].to_pylist() if n > 0)
    assert held["circuit_open"] == sum(hosts["circuit_open"].to_pylist())


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_chromium_renders_the_dashboard_with_the_crawldb_s_counts(api, crawled, tmp_path):
    _, rows, _ = crawled
    assert requests.get(f"{api}/dashboard", timeout=30).status_code == 401
    url = f"{api}/dashboard?key={KEY}"
    dom = chromium("--virtual-time-budget=5000", "--dump-dom", url, profile=tmp_path / "p1").stdout
    assert f'id="crawldb-total">{len(rows)}<' in dom
    for status, count in Counter(row["status"] for row in rows).items():
        assert f'id="status-{status}">{count}<' in dom, status
    assert dom.count('class="uplot') >= 2  # both charts drawn by the page's script
    assert 'id="hosts-slowest"' in dom and 'id="rounds"' in dom
    shot = ROOT / "build" / "dashboard.png"
    shot.parent.mkdir(exist_ok=True)
    chromium(
        "--virtual-time-budget=5000",
        "--window-size=1280,1400",
        "--hide-scrollbars",
        f"--screenshot={shot}",
        url,
        profile=tmp_path / "p2",
    )
    assert shot.stat().st_size > 20_000  # a page drawn, not a blank one


def test_the_textfile_is_written_after_a_round(crawled_copy, web, tmp_path):
    data, _, _ = crawled_copy
    textfile = tmp_path / "trawl.prom"
    args = web_crawl_args(data.root, AGENT("health"), f"metrics.textfile={textfile}")
    assert crawl.main(["--rounds", "1", "--adddays", "31", *args]) == 0
    found = families(textfile.read_text())
    crawldb = crawl_rows(data)
    assert found["trawl_crawldb_all_urls"] == {(): crawldb}
    assert not list(tmp_path.glob("*.tmp"))  # written beside, then renamed


def crawl_rows(data) -> int:
    return DeltaTable(data.crawldb).to_pyarrow_dataset().count_rows()
