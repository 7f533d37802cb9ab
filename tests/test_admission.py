"""updatedb's trap defences on Spark: which new URLs enter the crawldb."""

import pytest

from crawldb.merge import new_row
from crawldb.schema import CRAWLDB
from engine.admission import admit
from engine.frames import python_df
from jobs.updatedb import LINKS_DDL
from lib.config import load_config

pytestmark = pytest.mark.spark


def crawldb(spark, urls):
    rows = [new_row(u, u.split("/")[2], 0, score=1.0, depth=1, fetch_interval=60) for u in urls]
    for row in rows:
        row["dedup_key"] = row["url"].rstrip("/") if row["url"].count("/") > 3 else row["url"]
    return python_df(spark, spark.sparkContext.parallelize(rows), CRAWLDB)


def links(spark, items):
    return spark.createDataFrame(
        [(u, k, u.split("/")[2], d, s, r, None, None) for u, k, d, s, r in items], LINKS_DDL
    )


def run(spark, known, found, *overrides):
    conf = load_config(overrides=list(overrides))
    decided = admit(links(spark, found), crawldb(spark, known), conf).collect()
    reasons = {r["url"]: r["reason"] for r in decided if r["reason"] is not None}
    return sorted(r["url"] for r in decided if r["reason"] is None), reasons


def test_depth_variants_and_known_urls(spark):
    known = ["http://a.test/x/", "http://a.test/deep"]
    found = [
        ("http://a.test/deep", "http://a.test/deep", 99, 0.1, False),  # known: always kept
        ("http://a.test/far", "http://a.test/far", 4, 0.1, False),
        ("http://a.test/x", "http://a.test/x", 1, 0.1, False),  # variant of /x/
        ("http://a.test/y", "http://a.test/x", 1, 0.1, True),  # variant, but a redirect target
        ("http://a.test/q?a=1&b=2", "http://a.test/q?a=1&b=2", 1, 0.1, False),
        ("http://a.test/q?b=2&a=1", "http://a.test/q?a=1&b=2", 1, 0.1, False),
    ]
    kept, reasons = run(spark, known, found, "db.max.depth=3")
    assert kept == ["http://a.test/deep", "http://a.test/q?a=1&b=2", "http://a.test/y"]
    assert reasons == {
        "http://a.test/far": "depth",
        "http://a.test/x": "duplicate_variant",
        "http://a.test/q?b=2&a=1": "duplicate_variant",
    }


def test_host_and_pattern_caps_keep_the_best(spark):
    known = ["http://a.test/1", "http://b.test/item/1"]
    found = [(f"http://a.test/p{i}", f"http://a.test/p{i}", 2, float(i), False) for i in range(4)]
    found += [
        (f"http://b.test/item/{i}", f"http://b.test/item/{i}", 2, 0.1, False) for i in (2, 3, 4)
    ]
    kept, reasons = run(spark, known, found, "db.max.urls.per.host=3", "db.max.urls.per.pattern=2")
    assert "http://a.test/p3" in kept and "http://a.test/p2" in kept  # best scores first
    assert reasons["http://a.test/p0"] == "host_cap" and reasons["http://a.test/p1"] == "host_cap"
    assert kept.count("http://b.test/item/2") == 1
    assert reasons["http://b.test/item/3"] == "pattern_cap"
    assert reasons["http://b.test/item/4"] == "host_cap"  # 1 known + 3 new > 3: first cap wins
