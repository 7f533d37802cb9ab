"""Sitemaps on Spark against the local web (the ``sitemaps`` host of testweb.site).

Its robots.txt names a sitemap index (and a sitemap on another host); the index lists a
gzipped URL set (/page/1-8 monthly, /hidden/1-3 weekly and linked from nowhere, an
off-host URL, a URL robots.txt disallows) and a URL set giving /page/1-3 the start of
the current epoch as lastmod. robots.txt is not cached (``robots.cache.ttl=0``), so
every round that fetches from the host reads robots.txt and the sitemaps again.
"""

from pathlib import Path

import pytest
from crawlruns import web_crawl_args
from weblog import entries_for

from engine.runtime.layout import DataDir
from jobs import crawl
from lib import vocabulary as st
from testweb.site import HIDDEN_PAGES

pytestmark = [pytest.mark.spark, pytest.mark.web]
AGENT_URL = "https://trawl.invalid/test-sitemaps"
DAY = 86_400


def rows_of(spark, data: DataDir) -> dict:
    return {r["url"]: r for r in spark.read.format("delta").load(data.crawldb).collect()}


@pytest.fixture(scope="module")
def sitemapped(spark, web, tmp_path_factory):
    root = tmp_path_factory.mktemp("sitemaps")
    base = web.site.base(web.site.host_with("sitemaps"))
    seeds = root / "seeds.txt"
    seeds.write_text(f"{base}/\n")
    data = DataDir.at(root / "data")
    args = web_crawl_args(Path(data.root), AGENT_URL, "robots.cache.ttl=0")
    assert crawl.main(["--seeds", str(seeds), "--rounds", "2", *args]) == 0
    after_two = rows_of(spark, data)
    log_two = entries_for(web, AGENT_URL)
    web.advance_epoch()
    try:
        # 8 days on: only the weekly /hidden/ pages are due; robots.txt and the sitemaps
        # are read again, and the fresh sitemap's lastmod is newer than /page/1-3's fetch.
        assert crawl.main(["--rounds", "1", "--adddays", "8", *args]) == 0
        after_three = rows_of(spark, data)
        assert crawl.main(["--rounds", "1", *args]) == 0
    finally:
        web.advance_epoch(-1)
    return data, base, after_two, after_three, log_two, entries_for(web, AGENT_URL)


def test_sitemap_urls_are_crawled_with_their_changefreq(sitemapped):
    _, base, rows, _, log, _ = sitemapped
    for k in range(1, HIDDEN_PAGES + 1):
        hidden = rows[f"{base}/hidden/{k}"]
        assert hidden["status"] == st.FETCHED and hidden["fetch_interval"] == 7 * DAY
    assert rows[f"{base}/page/5"]["fetch_interval"] == 30 * DAY  # monthly
    paths = [e["path"] for e in log if e["host"] == base.split("//")[1].split(":")[0]]
    for sitemap in ("/sitemap-index.xml", "/sitemap-pages.xml.gz", "/sitemap-fresh.xml"):
        assert paths.count(sitemap) == 2, sitemap  # once per round (robots.txt read each)
    assert "/private/listed" not in paths  # listed, but robots.txt disallows it
    assert rows[f"{base}/private/listed"]["status"] == st.GONE
    assert not [url for url in rows if "invalid" in url]  # off-host entries dropped
    assert not [url for url in rows if "/sitemap" in url]  # sitemaps are not pages


def test_a_newer_lastmod_makes_a_page_due_at_once(sitemapped):
    data, base, _, after_three, _, log = sitemapped
    last = data.segment(data.segment_names()[-1])
    fourth = spark_fetchlist(last)
    assert sorted(fourth) == [f"{base}/page/{k}" for k in (1, 2, 3)]
    # round 3, 8 days on: only the weekly pages were due (and the daily robots-denied URL)
    third = spark_fetchlist(data.segment(data.segment_names()[-2]))
    expected = [f"{base}/hidden/{k}" for k in range(1, HIDDEN_PAGES + 1)]
    assert sorted(third) == sorted([*expected, f"{base}/private/listed"])
    assert after_three[f"{base}/page/4"]["fetch_time"] > after_three[f"{base}/page/1"]["fetch_time"]


def spark_fetchlist(segment) -> list[str]:
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    return [r["url"] for r in spark.read.format("delta").load(segment.table("fetchlist")).collect()]
