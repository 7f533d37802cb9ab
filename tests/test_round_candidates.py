"""The pages a round's verdicts depend on, found by one scan of a large crawldb
(engine.executors.round_candidates): each case of a meeting or a canonical brings its page in, a
page that cannot meet the round stays out, and the verdicts over the pages found are
those over the whole crawldb."""

import pytest

from crawldb.duplicates import round_verdicts
from crawldb.schema import CRAWLDB
from engine.executors.round_candidates import collected_pages, narrowed_pages
from engine.tables.frames import python_df, rows_to_df
from lib import vocabulary as st
from lib.config import load_config

pytestmark = pytest.mark.spark

ROUND, EARLIER = "20261204000000", "20261203000000"
SKETCH = bytes(range(64))


def row(url, body, simhash=0, minhash=None, segment=EARLIER, **rest):
    return {
        "url": url,
        "status": rest.get("status", st.FETCHED),
        "segment": segment,
        "content_hash": body,
        "simhash": simhash,
        "minhash": minhash,
        "score": rest.get("score", 1.0),
        "last_fetch_time": 1_000,
        "fetch_time": 1_000,
        "canonical": rest.get("canonical"),
        "duplicate_of": rest.get("duplicate_of"),
    }


def sketch(seed: int) -> bytes:
    """A sketch sharing no byte position with SKETCH or another seed's."""
    return bytes((i * 7 + seed * 13 + 101) % 256 for i in range(64))


OLD = [
    row("http://a/exact", "h1", minhash=sketch(1), simhash=1 << 60),
    # 40 of 64 bytes as SKETCH: a band agrees, and they resemble.
    row("http://a/banded", "b", minhash=SKETCH[:40] + bytes(24), simhash=2 << 50),
    # Unsketched, 2 bits from the sketched page of the round: they meet on a block.
    row("http://a/unsketched", "u", simhash=(7 << 20) ^ 0b11),
    # Sketched, its SimHash as near, no band shared: two sketched pages do not meet.
    row("http://a/sketched-near", "s", minhash=sketch(2), simhash=(7 << 20) ^ 0b1),
    # Sketched, 1 bit from an unsketched page of the round: they meet on a block.
    row("http://a/sketched-old", "w", minhash=sketch(16), simhash=0x1111222233334444 ^ 1),
    row("http://a/names-round", "c1", minhash=sketch(3), canonical="http://b/page"),
    row("http://a/named", "c2", minhash=sketch(4), simhash=5 << 30),
    # Met by its body, it names a canonical that nothing else brings in.
    row("http://a/met-naming", "h2", minhash=sketch(5), canonical="http://a/target"),
    row("http://a/target", "t", minhash=sketch(6), simhash=9 << 40),
    row("http://a/far", "f", minhash=sketch(7), simhash=0x123456789ABCDEF0),
    row("http://a/refetched", "r", minhash=sketch(8), simhash=11 << 12),
    row("http://a/own-segment", "o", minhash=sketch(9), simhash=13 << 44, segment=ROUND),
    row("http://a/unfetched", None, simhash=None, status=st.UNFETCHED),
]
CHANGED = [
    row("http://b/exact", "h1", minhash=sketch(11), simhash=17 << 36, segment=ROUND),
    row("http://b/near", "n", minhash=SKETCH, simhash=19 << 36, segment=ROUND),
    row("http://b/sketched", "k", minhash=sketch(12), simhash=7 << 20, segment=ROUND),
    row("http://b/unsketched", "v", simhash=0x1111222233334444, segment=ROUND),
    row("http://b/page", "p", minhash=sketch(13), simhash=23 << 36, segment=ROUND),
    row("http://b/naming", "q", minhash=sketch(14), canonical="http://a/named", segment=ROUND),
    row("http://b/body-h2", "h2", minhash=sketch(15), simhash=29 << 36, segment=ROUND),
    row("http://a/refetched", None, simhash=None, status=st.GONE, segment=ROUND),
]


@pytest.fixture(scope="module")
def frames(spark):
    rdd = spark.sparkContext.parallelize
    return python_df(spark, rdd(OLD), CRAWLDB), rows_to_df(spark, rdd(CHANGED), CRAWLDB)


def test_every_page_the_round_depends_on_and_no_other(frames):
    old, changed = frames
    pages = narrowed_pages(old, changed, ROUND, load_config().as_dict())
    assert set(pages) == {
        *(r["url"] for r in CHANGED if r["content_hash"]),
        "http://a/exact",
        "http://a/banded",
        "http://a/unsketched",
        "http://a/sketched-old",
        "http://a/names-round",
        "http://a/named",
        "http://a/met-naming",
        "http://a/target",
        "http://a/own-segment",
    }
    assert {url for url, page in pages.items() if page["_new"]} == {
        r["url"] for r in CHANGED if r["content_hash"]
    }


def test_the_verdicts_are_the_whole_crawldbs(frames):
    old, changed = frames
    conf = load_config().as_dict()
    everything = collected_pages(old, changed, ROUND)
    narrowed = narrowed_pages(old, changed, ROUND, conf)
    assert {url: everything[url] for url in narrowed} == narrowed
    found, restored = round_verdicts(narrowed, ROUND, conf)
    assert (found, restored) == round_verdicts(everything, ROUND, conf)
    assert found == {
        "http://b/exact": "http://a/exact",
        "http://a/banded": "http://b/near",  # the shorter URL is kept
        "http://a/unsketched": "http://b/sketched",
        "http://a/sketched-old": "http://b/unsketched",
        "http://a/names-round": "http://b/page",
        "http://b/naming": "http://a/named",
    }  # http://a/met-naming is its canonical's copy: it is not compared with the round's


def test_with_minhash_off_sketched_pages_meet_on_blocks(frames):
    """With MinHash off, every page meets on SimHash blocks: the sketched near page too."""
    old, changed = frames
    conf = load_config(overrides=["dedup.minhash.threshold=-1"]).as_dict()
    pages = narrowed_pages(old, changed, ROUND, conf)
    assert "http://a/sketched-near" in pages and "http://a/far" not in pages
    assert round_verdicts(pages, ROUND, conf) == round_verdicts(
        collected_pages(old, changed, ROUND), ROUND, conf
    )
