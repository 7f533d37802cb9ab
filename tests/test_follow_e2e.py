"""One crawl round that follows links inside the fetch task (fetcher.follow.outlinks.depth),
on real Spark and Delta Lake against the local test web, proven from its request log."""

import pytest
from crawlruns import web_crawl_args
from weblog import (
    by_host,
    disallowed_requests,
    entries_for,
    host_delays,
    politeness_violations,
    warc_page_responses,
)

from engine.runtime.layout import DataDir
from engine.tables.store import crawldb_version
from jobs import crawl, updatedb
from lib import vocabulary as st

pytestmark = [pytest.mark.spark, pytest.mark.web]
AGENT_URL = "https://trawl.invalid/test-follow"
FOLLOW = ["fetcher.follow.outlinks.depth=2"]  # Nutch's budget: 8 links, then 4, then none


@pytest.fixture(scope="module")
def followed(spark, web, tmp_path_factory):
    root = tmp_path_factory.mktemp("follow")
    seeds = root / "seeds.txt"
    seeds.write_text(f"{web.seeds[0]}\n{web.seeds[2]}\n")
    args = ["--seeds", str(seeds), "--rounds", "1", *web_crawl_args(root / "data", AGENT_URL)]
    assert crawl.main(args + [a for s in FOLLOW for a in ("--conf", s)]) == 0
    data = DataDir.at(root / "data")
    rows = {r["url"]: r.asDict() for r in spark.read.format("delta").load(data.crawldb).collect()}
    return data, rows, entries_for(web, AGENT_URL)


def page_paths(entries: list[dict]) -> set[str]:
    """Paths asked for, robots.txt, sitemaps and soft-404 probes left out."""
    return {
        e["path"]
        for e in entries
        if e["path"] not in ("/robots.txt", "/sitemap.xml") and "trawl-probe" not in e["path"]
    }


def test_one_round_reaches_two_link_levels_on_the_seed_hosts_only(followed, web):
    _, _, log = followed
    hosts = by_host(log)
    assert set(hosts) == {web.site.hosts[0], web.site.hosts[2]}  # links to other hosts wait
    # Host 0's home (level 0) links, in order, to /page/1, /page/2, /private/secret
    # (disallowed: never asked), /old-page, /missing and /data.txt: 6 of its 8. Level 1:
    # /page/2 links to /page/3 and /page/4 (/page/1 only to pages already taken); the
    # redirect /old-page -> /page/3 reaches /page/3 at level 1, before its queued level-2
    # copy, so /page/3 adds /page/6 at level 2, as a crawl in rounds finds it at depth 2.
    # Level 2 pages follow nothing.
    assert page_paths(hosts[web.site.hosts[0]]) == {
        "/",
        "/page/1",
        "/page/2",
        "/old-page",
        "/missing",
        "/data.txt",
        "/page/3",
        "/page/4",
        "/page/6",
    }


def test_followed_requests_stay_polite_and_archived_once(followed, web, spark):
    data, _, log = followed
    assert disallowed_requests(log, web.site) == []
    assert politeness_violations(log, host_delays(web)) == []
    segment = data.segment(data.segment_names()[0])
    answered = (
        spark.read.format("delta")
        .load(segment.table("fetch"))
        .where("http_status IS NOT NULL AND origin != 'robots'")
    )
    origins = {r["origin"] for r in answered.select("origin").collect()}
    assert "outlink" in origins
    urls = [r["url"] for r in spark.read.format("delta").load(segment.table("fetch")).collect()]
    assert len(urls) == len(set(urls))  # the copy of /page/3 left in the queue made no row
    expected = sorted(r["url"] for r in answered.select("url").collect())
    assert sorted(warc_page_responses(segment)) == expected


def test_crawldb_holds_the_followed_pages_and_what_they_link_to(followed, web):
    data, rows, _ = followed
    (segment,) = data.segment_names()
    base0, base1 = web.site.base(0), web.site.base(1)
    page4 = rows[f"{base0}/page/4"]
    assert (page4["status"], page4["depth"], page4["segment"]) == (st.FETCHED, 2, segment)
    page6 = rows[f"{base0}/page/6"]  # through the redirect: depth 2, as in rounds
    assert (page6["status"], page6["depth"]) == (st.FETCHED, 2)
    assert rows[f"{base0}/page/3"]["depth"] == 1
    for deeper in ("/page/5", "/page/7"):  # linked from level-2 pages
        assert (rows[base0 + deeper]["status"], rows[base0 + deeper]["depth"]) == (
            st.UNFETCHED,
            3,
        )
    assert rows[f"{base1}/page/1"]["status"] == st.UNFETCHED  # another host: next round
    assert rows[f"{base0}/private/secret"]["reason"] == st.REASON_ROBOTS_DENIED
    assert rows[f"{base0}/old-page"]["redirect_to"] == f"{base0}/page/3"


def test_updatedb_again_changes_nothing(followed, spark):
    data, _, _ = followed
    version = crawldb_version(spark, data)
    (segment,) = data.segment_names()
    args = ["--segment", segment, *web_crawl_args(data.root, AGENT_URL)]
    assert updatedb.main(args) == 0
    assert crawldb_version(spark, data) == version
