"""The soft-404 rule (crawldb.soft404), held to a row-by-row oracle: which pages look
like their host's answer to a path that cannot exist, and which answer is the template."""

import random

import pyarrow as pa
import pytest

from crawldb import soft404
from lib import vocabulary as st

SEGMENT = "20261205000000"
HOSTS = ("a.test", "b.test", "c.test", "d.test")
MASK = (1 << 64) - 1


def looks_missing(row, template, distance) -> bool:
    """The oracle, from the module's docstring."""
    if row["status"] != st.FETCHED or row["segment"] != SEGMENT or template is None:
        return False
    probe_hash, probe = template
    if probe_hash is None:
        return False
    if row["content_hash"] == probe_hash:
        return True
    if distance < 0 or None in (probe, row["simhash"]):
        return False
    return ((row["simhash"] ^ probe) & MASK).bit_count() <= distance


def random_rows(pick):
    probe = {"a.test": ("h1", 0x0F0F), "b.test": ("h2", -5), "c.test": (None, 7)}
    rows = []
    for _ in range(300):
        host = pick.choice(HOSTS)
        flipped = (probe.get(host, (None, 0))[1] ^ pick.choice([0, 1, 3, 0xFF, 1 << 63])) & MASK
        near = flipped - (1 << 64) if flipped >= 1 << 63 else flipped  # signed, as stored
        rows.append(
            {
                "host": host,
                "status": pick.choice([st.FETCHED, st.FETCHED, st.GONE, None]),
                "segment": pick.choice([SEGMENT, SEGMENT, "20261204000000", None]),
                "content_hash": pick.choice(["h1", "h2", "other", None]),
                "simhash": pick.choice([near, None, pick.randrange(-(2**63), 2**63)]),
                "reason": None,
            }
        )
    return probe, rows


SCHEMA = pa.schema(
    [
        *((name, pa.string()) for name in ("host", "status", "segment", "content_hash")),
        ("simhash", pa.int64()),
        ("reason", pa.string()),
    ]
)


@pytest.mark.parametrize("distance", [-1, 0, 3, 8])
def test_the_pages_marked_are_the_oracles(distance):
    pick = random.Random(distance)
    for _ in range(10):
        probe, rows = random_rows(pick)
        table = pa.Table.from_pylist(rows, schema=SCHEMA)
        marked = soft404.marked(table, probe, SEGMENT, distance).to_pylist()
        for before, after in zip(rows, marked, strict=True):
            hit = looks_missing(before, probe.get(before["host"]), distance)
            assert (after["status"], after["reason"]) == (
                (st.GONE, "soft_404") if hit else (before["status"], None)
            )


def test_the_template_is_the_segments_answer_else_the_caches():
    fetched = pa.table(
        {
            "url": ["http://a.test/x1", "http://a.test/x0", "http://b.test/x", "http://c.test/p"],
            "host": ["a.test", "a.test", "b.test", "c.test"],
            "fetched_at": [1, 2, 3, 4],
            "http_status": [200, 200, 404, 200],
            "origin": [st.ORIGIN_PROBE, st.ORIGIN_PROBE, st.ORIGIN_PROBE, "fetchlist"],
        }
    )
    prints = pa.table(
        {"url": ["http://a.test/x0"], "content_hash": ["h"], "simhash": pa.array([5], pa.int64())}
    )
    answers = soft404.probe_answers(fetched, prints)
    assert answers.column("url").to_pylist() == ["http://a.test/x0", "http://b.test/x"]
    cached = pa.table(
        {
            "host": ["b.test", "d.test", "e.test"],
            "url": ["u", "u", "u"],
            "probed_at": [0, 0, 0],
            "http_status": [200, 200, 404],
            "content_hash": ["old", "d", "e"],
            "simhash": pa.array([1, 2, 3], pa.int64()),
        }
    )
    # b.test answered 404 this round: the cache's older 200 is not its template.
    assert soft404.templates(answers, cached) == {"a.test": ("h", 5), "d.test": ("d", 2)}
    assert soft404.templates(None, None) == {}
