"""The linkdb: who links to each page, with what anchor text (Nutch's invertlinks),
kept by updatedb from each round's parsed outlinks: the rule on its own (no Spark), and
after the three-round crawl every page fetched through a link has its inlink rows with
the anchors of the links that led to it, read by delta-rs and by readlinkdb."""

import json
import os
import subprocess
from collections import defaultdict

import pyarrow as pa
import pytest
from conftest import ROOT
from deltalake import DeltaTable

from crawldb.linkdb import inlink_rows, linkdb_schema, merged, round_rows
from lib import vocabulary as st
from lib.config import load_config


def pages(*rows) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {"url": url, "outlinks": [{"url": u, "anchor": a} for u, a in links]}
            for url, links in rows
        ]
    )


def test_a_round_s_pages_give_one_inlink_row_a_source_and_target():
    conf = load_config().as_dict()
    table = pages(
        (
            "http://a.test/",
            [
                ("http://a.test/", "home"),
                ("http://b.test/x", ""),
                ("http://b.test/x", "X"),
                ("http://a.test/p", "P"),
            ],
        ),
        ("http://b.test/x", [("http://a.test/p", "from b")]),
    )
    rows = sorted(map(tuple, (r.values() for r in inlink_rows(table, conf).to_pylist())))
    assert rows == [
        ("http://a.test/p", "http://a.test/", "a.test", "P"),
        ("http://a.test/p", "http://b.test/x", "b.test", "from b"),
        ("http://b.test/x", "http://a.test/", "a.test", "X"),  # the first anchor not empty
    ]
    external = load_config(overrides=["linkdb.ignore.internal.host=true"]).as_dict()
    kept = {(r["url"], r["from_url"]) for r in inlink_rows(table, external).to_pylist()}
    assert kept == {("http://a.test/p", "http://b.test/x"), ("http://b.test/x", "http://a.test/")}


def links(*rows) -> pa.Table:
    names = ("url", "from_url", "from_host", "anchor")
    return pa.Table.from_pylist([dict(zip(names, row, strict=True)) for row in rows])


def test_a_link_seen_again_keeps_its_first_sighting_and_takes_the_round_s_anchor():
    old = round_rows(
        links(
            ("u1", "p1", "a.test", "one"), ("u1", "p2", "a.test", "two"), ("u2", "p1", "a.test", "")
        ),
        "s1",
        1_000_000,
    )
    new = round_rows(
        links(
            ("u1", "p1", "b.test", "ONE"),  # seen again
            ("u3", "p1", "a.test", "three"),  # new
            ("u3", "p1", "a.test", "again"),  # the same key twice: its first row counts
        ),
        "s2",
        2_000_000,
    )
    rows = {(r["url"], r["from_url"]): r for r in merged(old, new).to_pylist()}
    assert sorted(rows) == [("u1", "p1"), ("u1", "p2"), ("u2", "p1"), ("u3", "p1")]
    again = rows[("u1", "p1")]
    assert (again["from_host"], again["anchor"]) == ("b.test", "ONE")
    assert (again["first_segment"], again["last_segment"]) == ("s1", "s2")
    assert again["first_seen"].timestamp() == 1 and again["last_seen"].timestamp() == 2
    assert rows[("u1", "p2")] == old.to_pylist()[1]  # untouched rows stay as they were
    assert (rows[("u3", "p1")]["anchor"], rows[("u3", "p1")]["first_segment"]) == ("three", "s2")
    assert merged(linkdb_schema().empty_table(), new).num_rows == 2
    assert merged(old, linkdb_schema().empty_table()).to_pylist() == old.to_pylist()


@pytest.mark.spark
@pytest.mark.web
def test_every_page_reached_by_a_link_has_its_inlinks_with_their_anchors(crawled, spark):
    data, rows, _ = crawled
    links = DeltaTable(data.linkdb).to_pyarrow_table().to_pylist()  # delta-rs reads it
    inlinks = defaultdict(set)
    for link in links:
        inlinks[link["url"]].add((link["from_url"], link["anchor"]))
    assert len({(row["url"], row["from_url"]) for row in links}) == len(links)  # one a pair
    parsed = defaultdict(set)  # what the parse tables say links to each page
    for name in data.segment_names():
        for page in spark.read.format("delta").load(data.segment(name).table("parse")).collect():
            for outlink in page["outlinks"] or []:
                if outlink["url"] != page["url"]:
                    parsed[outlink["url"]].add((page["url"], outlink["anchor"] or ""))
    redirected = {r["redirect_to"] for r in rows if r["redirect_to"]}
    reached = [
        r["url"]
        for r in rows
        if r["status"] == st.FETCHED and r["depth"] and r["url"] not in redirected
    ]
    assert len(reached) >= 5
    for url in reached:
        assert inlinks[url], url
        assert inlinks[url] <= parsed[url], url  # each row is a link a page made, its anchor
    assert sum(bool(anchor) for url in reached for _, anchor in inlinks[url]) > 0

    target = reached[0]
    done = subprocess.run(
        [
            str(ROOT / "submit.sh"),
            "readlinkdb",
            "--data",
            str(data.root),
            "--url",
            target,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
        check=True,
    )
    printed = {
        (row["from_url"], row["anchor"]) for row in map(json.loads, done.stdout.splitlines())
    }
    assert printed == inlinks[target]
