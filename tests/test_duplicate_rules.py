"""The round's duplicate rules in plain Python (crawldb.duplicates, crawl's pass for a
small crawldb), case by case. Their agreement with the Spark pass on a real crawl is
tested in test_dedup.py and test_dedup_quality.py."""

from crawldb.duplicates import keep_key, round_verdicts
from lib import vocabulary as st

CONF = {"dedup.simhash.distance": 3, "dedup.minhash.threshold": 0.5, "dedup.canonical": True}
ROUND, EARLIER = "20261204000000", "20261203000000"


def page(url, body="a", simhash=0, minhash=None, segment=ROUND, **rest):
    return {
        "url": url,
        "status": rest.get("status", st.FETCHED),
        "duplicate_of": rest.get("duplicate_of"),
        "segment": segment,
        "content_hash": body,
        "simhash": simhash,
        "minhash": minhash,
        "score": rest.get("score", 1.0),
        "last_fetch_time": rest.get("fetched", 1000),
        "canonical": rest.get("canonical"),
    }


def verdicts(*pages):
    return round_verdicts({p["url"]: p for p in pages}, ROUND, CONF)


def test_the_copy_kept_is_the_best_ranked():
    best = page("http://a/x", score=2.0)
    assert keep_key(best) < keep_key(page("http://a/x"))
    assert keep_key(page("http://a/x")) < keep_key(page("http://a/xx"))
    assert keep_key(page("http://a/y", fetched=1)) < keep_key(page("http://a/x", fetched=2))


def test_exact_and_near_copies_of_an_earlier_page():
    kept = page("http://a/p", body="h", simhash=0b1111 << 40, segment=EARLIER)
    exact = page("http://a/p?ref=1", body="h", simhash=12345)
    near = page("http://a/q", body="n", simhash=(0b1111 << 40) ^ 0b101)
    far = page("http://a/r", body="f", simhash=(0b1111 << 40) ^ 0xFF00FF)
    found, restored = verdicts(kept, exact, near, far)
    assert found == {"http://a/p?ref=1": "http://a/p", "http://a/q": "http://a/p"}
    assert restored == []


def test_sketches_that_resemble_meet_on_a_band():
    sketch = bytes(range(64))
    half = sketch[:40] + bytes(24)  # 40 of 64 bytes agree: above 0.5
    little = sketch[:8] + bytes(56)  # 8 of 64: below
    kept = page("http://a/p", body="1", simhash=0, minhash=sketch, segment=EARLIER)
    near = page("http://a/q", body="2", simhash=-1, minhash=half)
    other = page("http://a/r", body="3", simhash=0x00FF00FF00FF00FF, minhash=little)
    found, _ = verdicts(kept, near, other)
    assert found == {"http://a/q": "http://a/p"}


def test_a_better_page_of_the_round_makes_an_earlier_one_its_copy():
    earlier = page("http://a/long/path", body="h", segment=EARLIER)
    better = page("http://a/p", body="h")
    found, _ = verdicts(earlier, better)
    assert found == {"http://a/long/path": "http://a/p"}
    # An earlier page already a duplicate is left as it is.
    marked = page("http://a/long/path", body="h", segment=EARLIER, status=st.DUPLICATE)
    assert verdicts(marked, better)[0] == {}


def test_canonical_and_restored():
    target = page("http://a/t", body="t", simhash=0)
    naming = page("http://a/n", body="n", simhash=-1, canonical="http://a/t")
    freed = page("http://a/f", body="f", simhash=0x00FF00FF00FF00FF, status=st.DUPLICATE)
    found, restored = verdicts(target, naming, freed)
    assert found == {"http://a/n": "http://a/t"}
    assert restored == ["http://a/f"]
