"""updatedb's trap defences (crawldb.admission, one rule over Arrow): which new URLs
enter the crawldb, held to a link-by-link oracle (tests/admission_oracle.py) on chosen
and random rounds; and Spark's executor (engine.executors.admission: buckets of whole registered
domains, a Python call a bucket) decides every link as the rule run on the whole round."""

import random
from collections import Counter

import admission_oracle
import pyarrow as pa
import pytest

from crawldb import admission
from crawldb.merge import new_row
from crawldb.schema import CRAWLDB
from engine.tables.frames import python_df
from jobs.updatedb import LINKS_DDL
from lib.config import load_config


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


def decide(rows, found, conf) -> dict:
    """url -> reason (None: kept) by the rule, checked against the oracle's."""
    schema = pa.schema(
        [("url", pa.string()), ("dedup_key", pa.string()), ("host", pa.string())]
        + [("depth", pa.int32()), ("score", pa.float64()), ("redirect", pa.bool_())]
    )
    links = pa.Table.from_pylist(found, schema=schema)
    known = pa.Table.from_pylist(
        [{name: row[name] for name in ("url", "dedup_key", "host")} for row in rows]
    )
    decided = admission.admit(links, known, conf.as_dict()).to_pylist()
    by_rule = {r["url"]: r["reason"] for r in decided}
    by_oracle = {r["url"]: r["reason"] for r in admission_oracle.admit(found, rows, conf.as_dict())}
    assert by_rule == by_oracle
    return by_rule


def run(known, found, *overrides):
    conf = load_config(overrides=list(overrides))
    decided = decide(crawldb_rows(known), link_rows(found), conf)
    reasons = {url: reason for url, reason in decided.items() if reason is not None}
    return sorted(url for url, reason in decided.items() if reason is None), reasons


def test_depth_variants_and_known_urls():
    known = ["http://a.test/x/", "http://a.test/deep"]
    found = [
        ("http://a.test/deep", "http://a.test/deep", 99, 0.1, False),  # known: always kept
        ("http://a.test/far", "http://a.test/far", 4, 0.1, False),
        ("http://a.test/x", "http://a.test/x", 1, 0.1, False),  # variant of /x/
        ("http://a.test/y", "http://a.test/x", 1, 0.1, True),  # variant, but a redirect target
        ("http://a.test/q?a=1&b=2", "http://a.test/q?a=1&b=2", 1, 0.1, False),
        ("http://a.test/q?b=2&a=1", "http://a.test/q?a=1&b=2", 1, 0.1, False),
    ]
    kept, reasons = run(known, found, "db.max.depth=3")
    assert kept == ["http://a.test/deep", "http://a.test/q?a=1&b=2", "http://a.test/y"]
    assert reasons == {
        "http://a.test/far": "depth",
        "http://a.test/x": "duplicate_variant",
        "http://a.test/q?b=2&a=1": "duplicate_variant",
    }


def test_host_and_pattern_caps_keep_the_best():
    known = ["http://a.test/1", "http://b.test/item/1"]
    found = [(f"http://a.test/p{i}", f"http://a.test/p{i}", 2, float(i), False) for i in range(4)]
    found += [
        (f"http://b.test/item/{i}", f"http://b.test/item/{i}", 2, 0.1, False) for i in (2, 3, 4)
    ]
    kept, reasons = run(known, found, "db.max.urls.per.host=3", "db.max.urls.per.pattern=2")
    assert "http://a.test/p3" in kept and "http://a.test/p2" in kept  # best scores first
    assert reasons["http://a.test/p0"] == "host_cap" and reasons["http://a.test/p1"] == "host_cap"
    assert kept.count("http://b.test/item/2") == 1
    assert reasons["http://b.test/item/3"] == "pattern_cap"
    assert reasons["http://b.test/item/4"] == "host_cap"  # 1 known + 3 new > 3: first cap wins


def random_round(seed: int):
    """Many links of few hosts, keys and patterns, with nulls where a link can have
    them, and a quiet host under every cap: every defence bites."""
    pick = random.Random(seed)
    hosts = ["a.test", "b.test", "c.test", "www.c.test"]
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
    items += [(f"http://quiet.test/p/{n}", None, 1, 0.5, False) for n in range(5)]
    return crawldb_rows(known), link_rows(items)


CAPS = ["db.max.depth=3", "db.max.urls.per.host=60", "db.max.urls.per.pattern=12"]


@pytest.mark.parametrize("seed", range(8))
def test_the_rule_decides_every_link_as_the_oracle(seed):
    rows, links = random_round(20261204 + seed)
    reasons = Counter(decide(rows, links, load_config(overrides=CAPS)).values())
    assert all(reasons[r] for r in (None, "depth", "duplicate_variant", "host_cap", "pattern_cap"))


def test_no_cap_and_no_depth_limit_refuse_only_variants():
    rows, links = random_round(7)
    free = ["db.max.depth=-1", "db.max.urls.per.host=-1", "db.max.urls.per.pattern=-1"]
    reasons = Counter(decide(rows, links, load_config(overrides=free)).values())
    assert set(reasons) == {None, "duplicate_variant"}


@pytest.mark.spark
def test_sparks_buckets_decide_every_link_as_the_whole_round(spark):
    """Three buckets for five domains: buckets share domains, none splits one."""
    from engine.executors.admission import admit

    rows, links = random_round(20261205)
    conf = load_config(overrides=CAPS)
    table = python_df(spark, spark.sparkContext.parallelize(rows), CRAWLDB)
    frame = spark.createDataFrame([(*link.values(), None, None) for link in links], LINKS_DDL)
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    try:
        by_spark = {
            r["url"]: r["reason"] for r in admit(frame, table, conf.as_dict(), LINKS_DDL).collect()
        }
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    assert by_spark == decide(rows, links, conf)
