"""Soft 404s on Spark against the local web: a host that answers missing pages with 200.

The fetcher asks each host once per round for a path that cannot exist; updatedb marks
the host's pages that look like that answer as gone with reason soft_404.
"""

import pytest
from crawlruns import web_crawl_args
from weblog import entries_for

from crawldb import status as st
from jobs import crawl

pytestmark = [pytest.mark.spark, pytest.mark.web]
AGENT_URL = "https://trawl.invalid/test-soft404"


def test_soft_404_pages_are_gone_and_real_pages_kept(spark, web, tmp_path):
    base = web.site.base(web.site.host_with("soft404"))
    ring = web.site.base(0)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{base}/page/1\n{base}/page/2\n{base}/old-article\n{ring}/page/1\n")
    data = tmp_path / "data"
    args = ["--seeds", str(seeds), "--rounds", "1", *web_crawl_args(data, AGENT_URL)]
    assert crawl.main(args) == 0
    rows = {r["url"]: r for r in spark.read.format("delta").load(str(data / "crawldb")).collect()}
    missing = rows[f"{base}/old-article"]
    assert missing["status"] == st.GONE and missing["reason"] == "soft_404"
    assert missing["http_status"] == 200
    for url in (f"{base}/page/1", f"{base}/page/2", f"{ring}/page/1"):
        assert rows[url]["status"] == st.FETCHED, url
    assert not [u for u in rows if "trawl-probe-" in u]  # probes never enter the crawldb
    probes = [e for e in entries_for(web, AGENT_URL) if "trawl-probe-" in e["path"]]
    fetched_hosts = {r["host"] for r in rows.values() if r["fetch_count"]}
    assert sorted(e["host"] for e in probes) == sorted(fetched_hosts)  # one probe per host
