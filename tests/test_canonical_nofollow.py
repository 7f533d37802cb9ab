"""Canonical URLs and nofollow on Spark against the local web.

Host 0's /print/6 has text of its own but names /page/6 as canonical; /nofollow/meta
carries ``<meta name="robots" content="nofollow">`` over two links; /nofollow/rel has
one ``rel=nofollow`` link and one plain link to /page/4; /nofollow/header is sent with
``X-Robots-Tag: noindex, nofollow``. Two rounds, depth 1.
"""

import pytest
from crawlruns import web_crawl_args
from weblog import entries_for

from engine.runtime.layout import DataDir
from jobs import crawl, dedup
from lib import vocabulary as st

pytestmark = [pytest.mark.spark, pytest.mark.web]
AGENT_URL = "https://trawl.invalid/test-canonical"


@pytest.fixture(scope="module")
def canonical_crawl(spark, web, tmp_path_factory):
    root = tmp_path_factory.mktemp("canonical")
    base = web.site.base(0)
    seeds = root / "seeds.txt"
    seeds.write_text(
        f"{base}/print/6\n{base}/nofollow/meta\n{base}/nofollow/rel\n{base}/nofollow/header\n"
    )
    data = root / "data"
    args = [
        "--seeds",
        str(seeds),
        "--rounds",
        "2",
        *web_crawl_args(data, AGENT_URL, "db.max.depth=1"),
    ]
    assert crawl.main(args) == 0
    return DataDir.at(data), base, entries_for(web, AGENT_URL)


def crawldb_rows(spark, data: DataDir) -> dict:
    return {r["url"]: r for r in spark.read.format("delta").load(data.crawldb).collect()}


def test_canonical_is_crawled_and_the_page_becomes_its_duplicate(spark, canonical_crawl):
    data, base, log = canonical_crawl
    assert [e for e in log if e["path"] == "/page/6"]  # added from the canonical link
    assert dedup.main(["--data", str(data.root)]) == 0
    rows = crawldb_rows(spark, data)
    page, canonical = rows[f"{base}/print/6"], rows[f"{base}/page/6"]
    assert page["canonical"] == canonical["url"]
    assert page["status"] == st.DUPLICATE and page["duplicate_of"] == canonical["url"]
    assert canonical["status"] == st.FETCHED and canonical["canonical"] is None
    # Switched off, the page is a page of its own again; switched on, a duplicate again.
    off = ["--conf", "dedup.canonical=false"]
    assert dedup.main(["--data", str(data.root), *off]) == 0
    assert crawldb_rows(spark, data)[page["url"]]["status"] == st.FETCHED
    assert dedup.main(["--data", str(data.root)]) == 0
    assert crawldb_rows(spark, data)[page["url"]]["status"] == st.DUPLICATE


def test_nofollow_links_are_never_requested(spark, canonical_crawl):
    data, base, log = canonical_crawl
    paths = [e["path"] for e in log]
    assert "/nofollow/meta" in paths and "/nofollow/rel" in paths
    assert not [p for p in paths if p.startswith("/nf/")]
    assert "/page/4" in paths  # the plain link of /nofollow/rel was followed
    assert not [url for url in crawldb_rows(spark, data) if "/nf/" in url]
    first = data.segment(data.segment_names()[0])
    parsed = {r["url"]: r for r in spark.read.format("delta").load(first.table("parse")).collect()}
    meta, rel = parsed[f"{base}/nofollow/meta"], parsed[f"{base}/nofollow/rel"]
    assert meta["robots"] == "nofollow" and meta["outlinks"] == []
    assert meta["links_rejected"]["nofollow"] >= 2
    assert rel["links_rejected"]["nofollow"] == 1
    assert [link["url"] for link in rel["outlinks"]].count(f"{base}/page/4") == 1
    # The response header, read back from the fetch table's headers map by the parse job.
    header = parsed[f"{base}/nofollow/header"]
    assert header["robots"] == "nofollow,noindex"
    assert header["outlinks"] == [] and header["text"] is None
