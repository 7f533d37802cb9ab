"""A crawl of a host full of spider traps, on real Spark and Delta (issue 4).

Proven from the request log: no normalized URL is fetched twice, each trap gets a
bounded number of requests, tracking and session variants are never fetched, and the
good pages are all fetched.
"""

import json

import pytest
from conftest import web_conf_args
from weblog import entries_for

from engine.runtime.layout import DataDir
from jobs import crawl, readdb
from jobs.updatedb import remove_opted_out
from lib import vocabulary as st
from lib.url.normalize import normalize

pytestmark = [pytest.mark.spark, pytest.mark.web]
AGENT_URL = "https://trawl.invalid/test-traps"
PATTERN_CAP = 8  # above the 6 good pages, which share one pattern


@pytest.fixture(scope="module")
def trapped(spark, web, tmp_path_factory):
    root = tmp_path_factory.mktemp("traps")
    index = web.site.host_with("traps")
    home = f"{web.site.base(index)}/"
    seeds = root / "seeds.txt"
    seeds.write_text(home + "\n")
    args = ["--seeds", str(seeds), "--rounds", "5", "--data", str(root / "data")]
    args += web_conf_args(AGENT_URL, f"db.max.urls.per.pattern={PATTERN_CAP}")
    assert crawl.main(args) == 0
    data = DataDir.at(root / "data")
    rows = [r.asDict() for r in spark.read.format("delta").load(data.crawldb).collect()]
    log = [e for e in entries_for(web, AGENT_URL) if e["path"] != "/robots.txt"]
    return data, rows, log, web.site.base(index)


def test_no_normalized_url_is_fetched_twice(trapped):
    _, _, log, base = trapped
    fetched = [normalize(base + e["path"]) for e in log]
    assert len(fetched) == len(set(fetched))


def test_tracking_and_session_variants_are_never_fetched(trapped):
    _, rows, log, _ = trapped
    for entry in log:
        assert "utm_" not in entry["path"] and "sid=" not in entry["path"]
        assert "jsessionid" not in entry["path"]
    assert not [r for r in rows if "utm_" in r["url"] or "sid=" in r["url"]]


def test_good_pages_are_all_fetched(trapped):
    _, rows, _, base = trapped
    by_url = {r["url"]: r for r in rows}
    for k in range(1, 7):
        assert by_url[f"{base}/page/{k}"]["status"] == st.FETCHED


def test_traps_are_bounded(trapped):
    _, rows, log, _ = trapped
    calendar = [e for e in log if e["path"].startswith("/cal")]
    assert 0 < len(calendar) <= PATTERN_CAP
    assert len([r for r in rows if "/cal?" in r["url"]]) <= PATTERN_CAP
    nested = [e["path"] for e in log if e["path"].startswith("/loopdir/")]
    assert nested == ["/loopdir/", "/loopdir/more/", "/loopdir/more/more/"]


def test_slash_redirect_does_not_loop(trapped):
    _, rows, log, base = trapped
    assert [e["path"] for e in log if e["path"].startswith("/trailing")].count("/trailing/") == 1
    by_url = {r["url"]: r for r in rows}
    assert by_url[f"{base}/trailing/"]["status"] == st.REDIR_PERM
    assert by_url[f"{base}/trailing"]["status"] == st.FETCHED
    assert by_url[f"{base}/trailing"]["dedup_key"] == by_url[f"{base}/trailing/"]["dedup_key"]


def test_rejections_are_counted_in_readdb_stats(trapped, capsys):
    data, _, _, _ = trapped
    assert readdb.main(["--data", str(data.root), "--stats", "--json"]) == 0
    out = capsys.readouterr().out
    figures = json.loads(out[out.index("{") :])
    rejected = figures["rejected"]
    assert rejected["pattern_cap"] > 0 and rejected["repeated_segments"] > 0
    assert rejected["duplicate_variant"] > 0  # ?b=2&a=1 beside ?a=1&b=2


def test_opted_out_host_is_removed_from_the_crawldb(trapped, spark):
    data, rows, _, base = trapped
    host = base.split("//", 1)[1].split(":")[0]
    assert remove_opted_out(spark, data, [host]) == len([r for r in rows if r["host"] == host])
    left = spark.read.format("delta").load(data.crawldb).where(f"host = '{host}'").count()
    assert left == 0
