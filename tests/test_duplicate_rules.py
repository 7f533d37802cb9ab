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


def met_and_duplicates(a: dict, b: dict, conf: dict) -> bool:
    """The rules of crawldb.duplicates' docstring for one pair, written out plainly:
    the oracle the columnar search (crawldb.duplicate_pairs) is held to."""
    distance, threshold = conf["dedup.simhash.distance"], conf["dedup.minhash.threshold"]
    exact = a["content_hash"] is not None and a["content_hash"] == b["content_hash"]
    both_sketched = threshold >= 0 and a["minhash"] is not None and b["minhash"] is not None
    band = both_sketched and any(
        a["minhash"][j : j + 4] == b["minhash"][j : j + 4] for j in range(0, 64, 4)
    )
    simhashes = distance >= 0 and a["simhash"] is not None and b["simhash"] is not None
    block = simhashes and not both_sketched
    block = block and any((a["simhash"] ^ b["simhash"]) >> s & 0xFFFF == 0 for s in (0, 16, 32, 48))
    if not (exact or band or block):
        return False
    near = simhashes and ((a["simhash"] ^ b["simhash"]) & (2**64 - 1)).bit_count() <= distance
    agree = sum(x == y for x, y in zip(a["minhash"] or b"", b["minhash"] or b"", strict=False))
    needed = -(-64 * (threshold * 255 / 256 + 1 / 256) // 1)
    return exact or near or (band and agree >= needed)


def oracle_copies(pages: dict, conf: dict) -> dict:
    """best_copies by comparing every pair of a page of the round and another."""
    best = {}
    for a in (p for p in pages.values() if p["segment"] == ROUND):
        for b in pages.values():
            if a is b or not met_and_duplicates(a, b, conf):
                continue
            worse, better = (a, b) if keep_key(b) < keep_key(a) else (b, a)
            if worse["url"] not in best or keep_key(better) < keep_key(pages[best[worse["url"]]]):
                best[worse["url"]] = better["url"]
    return best


def random_pages(seed: int, count: int) -> dict:
    """Pages drawn from a few bodies, SimHashes a few bits apart and sketches sharing
    some bands, so that every way of meeting and judging happens, with missing values."""
    import random

    draw = random.Random(seed)
    bases = [draw.getrandbits(64) - 2**63 for _ in range(6)]
    sketches = [bytes(draw.getrandbits(8) for _ in range(64)) for _ in range(5)]
    pages = {}
    for number in range(count):
        simhash = draw.choice(bases) ^ sum(
            1 << draw.randrange(64) for _ in range(draw.randrange(6))
        )
        simhash = (simhash + 2**63) % 2**64 - 2**63
        sketch = bytearray(draw.choice(sketches))
        for _ in range(draw.choice((0, 4, 20, 40))):
            sketch[draw.randrange(64)] = draw.getrandbits(8)
        url = f"http://h{draw.randrange(3)}/{'p' * draw.randrange(1, 4)}{number}"
        pages[url] = page(
            url,
            body=draw.choice(["x", "y", None, *map(str, range(40))]),
            simhash=None if draw.random() < 0.1 else simhash,
            minhash=None if draw.random() < 0.3 else bytes(sketch),
            segment=draw.choice([ROUND, EARLIER]),
            score=draw.choice([None, 0.5, 1.0, 2.0]),
            fetched=draw.choice([None, 1, 2]),
        )
    return pages


def test_the_columnar_search_finds_what_comparing_every_pair_finds():
    from crawldb.duplicates import best_copies

    confs = [
        CONF,
        {**CONF, "dedup.minhash.threshold": -1},
        {**CONF, "dedup.simhash.distance": -1},
        {**CONF, "dedup.simhash.distance": 8, "dedup.minhash.threshold": 0.9},
    ]
    for seed, conf in enumerate(confs):
        pages = random_pages(seed, 160)
        fresh = [p for p in pages.values() if p["segment"] == ROUND]
        expected = oracle_copies(pages, conf)
        assert len(expected) > 20, "the draw gives duplicates of every kind"
        assert best_copies(fresh, pages, conf) == expected
