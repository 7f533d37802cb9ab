"""Soft 404s on Spark against the local web: a host that answers missing pages with 200.

The fetcher asks each host for a path that cannot exist; updatedb marks the host's pages
that look like that answer as gone with reason soft_404, and keeps the answer in
DIR/soft404 so that the host is not asked again before fetcher.soft404.probe.ttl.
"""

from collections import Counter

import pytest
from crawlruns import web_crawl_args
from weblog import entries_for

from jobs import crawl
from lib import vocabulary as st

pytestmark = [pytest.mark.spark, pytest.mark.web]
AGENT_URL = "https://trawl.invalid/test-soft404"


def _probes(web) -> Counter:
    """Probe requests per host, from the test web's log."""
    entries = entries_for(web, AGENT_URL)
    return Counter(e["host"] for e in entries if "trawl-probe-" in e["path"])


def _crawldb(spark, data):
    return {r["url"]: r for r in spark.read.format("delta").load(str(data / "crawldb")).collect()}


def test_soft_404_pages_are_gone_and_real_pages_kept(spark, web, tmp_path):
    base = web.site.base(web.site.host_with("soft404"))
    ring = web.site.base(0)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{base}/page/1\n{base}/page/2\n{base}/old-article\n{ring}/page/1\n")
    data = tmp_path / "data"
    args = ["--seeds", str(seeds), "--rounds", "1", *web_crawl_args(data, AGENT_URL)]
    assert crawl.main(args) == 0
    rows = _crawldb(spark, data)
    missing = rows[f"{base}/old-article"]
    assert missing["status"] == st.GONE and missing["reason"] == "soft_404"
    assert missing["http_status"] == 200
    for url in (f"{base}/page/1", f"{base}/page/2", f"{ring}/page/1"):
        assert rows[url]["status"] == st.FETCHED, url
    assert not [u for u in rows if "trawl-probe-" in u]  # probes never enter the crawldb
    probes = [e for e in entries_for(web, AGENT_URL) if "trawl-probe-" in e["path"]]
    fetched_hosts = {r["host"] for r in rows.values() if r["fetch_count"]}
    assert sorted(e["host"] for e in probes) == sorted(fetched_hosts)  # one probe per host

    # Round 2, within fetcher.soft404.probe.ttl: no host is asked again, and a soft-404
    # page fetched now is recognised by the host's cached answer.
    soft_host = rows[f"{base}/page/1"]["host"]
    seeds.write_text(f"{base}/gone-later\n")
    assert crawl.main(args) == 0
    rows = _crawldb(spark, data)
    assert rows[f"{base}/gone-later"]["status"] == st.GONE
    assert rows[f"{base}/gone-later"]["reason"] == "soft_404"
    probes = _probes(web)
    contacted = {e["host"] for e in entries_for(web, AGENT_URL)}
    assert len(contacted) > 2  # round 2 reached new hosts, which were asked once
    assert set(probes) == contacted and set(probes.values()) == {1}, probes
    cache = {r["host"]: r for r in spark.read.format("delta").load(str(data / "soft404")).collect()}
    assert set(cache) == contacted
    assert cache[soft_host]["http_status"] == 200 and cache[soft_host]["simhash"] is not None
    assert all(r["http_status"] is not None for r in cache.values())

    # Round 3 with the cache lifetime 0: the host is asked again, as before the cache.
    seeds.write_text(f"{base}/gone-too\n")
    assert crawl.main([*args, "--conf", "fetcher.soft404.probe.ttl=0"]) == 0
    assert _probes(web)[soft_host] == 2
    gone = _crawldb(spark, data)[f"{base}/gone-too"]
    assert (gone["status"], gone["reason"]) == (st.GONE, "soft_404")
