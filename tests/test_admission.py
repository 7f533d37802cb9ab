"""updatedb's trap defences on Spark: which new URLs enter the crawldb; and their twin
in plain Python (crawldb.admission), which decides every link the same."""

import random
from collections import Counter

import pytest

from crawldb import admission
from crawldb.merge import new_row
from crawldb.schema import CRAWLDB
from engine.admission import admit
from engine.frames import python_df
from jobs.updatedb import LINKS_DDL
from lib.config import load_config

pytestmark = pytest.mark.spark


def crawldb_rows(urls):
    rows = [new_row(u, u.split("/")[2], 0, score=1.0, depth=1, fetch_interval=60) for u in urls]
    for row in rows:
        row["dedup_key"] = row["url"].rstrip("/") if row["url"].count("/") > 3 else row["url"]
    return rows


def link_rows(items):
    """Links as dicts from ``(url, dedup_key, depth, score, redirect)``."""
    names = ("url", "dedup_key", "host", "depth", "score", "redirect")
    return [
        dict(zip(names, (u, k, u.split("/")[2], d, s, r), strict=True)) for u, k, d, s, r in items
    ]


def decide(spark, rows, found, conf) -> dict:
    """url -> reason (None: kept) by Spark's admission, checked against the Python twin's."""
    table = python_df(spark, spark.sparkContext.parallelize(rows), CRAWLDB)
    frame = spark.createDataFrame([(*link.values(), None, None) for link in found], LINKS_DDL)
    by_spark = {r["url"]: r["reason"] for r in admit(frame, table, conf).collect()}
    by_python = {r["url"]: r["reason"] for r in admission.admit(found, rows, conf.as_dict())}
    assert by_python == by_spark
    return by_spark


def run(spark, known, found, *overrides):
    conf = load_config(overrides=list(overrides))
    decided = decide(spark, crawldb_rows(known), link_rows(found), conf)
    reasons = {url: reason for url, reason in decided.items() if reason is not None}
    return sorted(url for url, reason in decided.items() if reason is None), reasons


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


def test_the_python_twin_decides_every_link_as_spark(spark):
    """Many links of few hosts, keys and patterns, with nulls where a link can have
    them: every defence bites, and both ways give each link the same reason."""
    pick = random.Random(20261204)
    hosts = ["a.test", "b.test", "c.test"]
    paths = ["/p/{}", "/item/{}", "/2026/{}/x", "/tag/{}/"]

    def url():
        return f"http://{pick.choice(hosts)}" + pick.choice(paths).format(pick.randrange(30))

    known = sorted({url() for _ in range(40)})
    items, seen = [], set()
    while len(items) < 300:
        link = url()
        if link in seen:
            continue
        seen.add(link)
        key = link.rstrip("/").replace("/2026/", "/") if pick.random() < 0.7 else None
        depth = pick.choice([0, 1, 2, 3, 4, None])
        score = pick.choice([0.1, 0.5, 1.0, None])
        items.append((link, key, depth, score, pick.choice([False, False, True, None])))
    # A quiet host under every cap: the twin skips counting its patterns.
    items += [(f"http://quiet.test/p/{n}", None, 1, 0.5, False) for n in range(5)]
    conf = load_config(
        overrides=["db.max.depth=3", "db.max.urls.per.host=60", "db.max.urls.per.pattern=12"]
    )
    decided = decide(spark, crawldb_rows(known), link_rows(items), conf)
    reasons = Counter(decided.values())
    assert all(reasons[r] for r in (None, "depth", "duplicate_variant", "host_cap", "pattern_cap"))
