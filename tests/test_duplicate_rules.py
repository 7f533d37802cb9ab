"""The duplicate rules (crawldb.duplicates over the keys of crawldb.duplicate_keys),
case by case and against an oracle that compares every pair; the same rules run by
Spark's tasks in test_dedup.py and test_dedup_quality.py."""

import random

import pyarrow as pa

from crawldb import duplicate_meetings
from crawldb.duplicate_keys import PAGE_COLUMNS, keep_rank
from crawldb.duplicates import round_verdicts, with_verdicts
from lib import vocabulary as st

CONF = {"dedup.simhash.distance": 3, "dedup.minhash.threshold": 0.5, "dedup.canonical": True}
ROUND, EARLIER = "20261204000000", "20261203000000"
SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("status", pa.string()),
        ("duplicate_of", pa.string()),
        ("segment", pa.string()),
        ("content_hash", pa.string()),
        ("simhash", pa.int64()),
        ("minhash", pa.binary()),
        ("score", pa.float64()),
        ("last_fetch_time", pa.int64()),
        ("canonical", pa.string()),
        ("fresh", pa.bool_()),
    ]
)


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


def table(pages, everything_fresh=False):
    rows = [{**p, "fresh": everything_fresh or p["segment"] == ROUND} for p in pages]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def all_verdicts(*pages, conf=CONF, everything_fresh=False):
    return round_verdicts(table(pages, everything_fresh), conf).to_pylist()


def verdicts(*pages, conf=CONF):
    """(found, restored) as url -> duplicate_of and the URLs restored."""
    rows = all_verdicts(*pages, conf=conf)
    found = {r["url"]: r["duplicate_of"] for r in rows if r["status"] == st.DUPLICATE}
    return found, sorted(r["url"] for r in rows if r["status"] == st.FETCHED)


def keep_key(p: dict) -> tuple:
    """The keep order written out: highest score (none last), shortest URL, earliest
    fetch (none last), URL."""
    score, fetched = p["score"], p["last_fetch_time"]
    return (
        (score is None, -score if score is not None else 0.0),
        len(p["url"]),
        (fetched is None, fetched or 0),
        p["url"],
    )


def test_the_copy_kept_is_the_best_ranked():
    pages = [
        page("http://a/x", score=2.0),
        page("http://a/x2"),
        page("http://a/xx", score=None),
        page("http://a/y", fetched=1),
        page("http://a/z", fetched=None),
    ]
    ranks = keep_rank(table(pages))
    expected = sorted(range(len(pages)), key=lambda i: keep_key(pages[i]))
    assert [int(i) for i in ranks.argsort()] == expected
    assert expected == [0, 3, 4, 1, 2]  # score, then length, then fetch time


def test_exact_and_near_copies_of_an_earlier_page():
    kept = page("http://a/p", body="h", simhash=0b1111 << 40, segment=EARLIER)
    exact = page("http://a/p?ref=1", body="h", simhash=0b1111 << 40)
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


def test_a_canonical_chain_marks_nothing_and_a_canonical_duplicate_is_not_compared():
    end = page("http://a/end", body="same", simhash=0, segment=EARLIER)
    middle = page(
        "http://a/mid", body="other", simhash=0x00FF00FF00FF00FF, canonical="http://a/end"
    )
    start = page("http://a/s", body="x", simhash=-1, canonical="http://a/mid")
    # Its body is the end's, but as a canonical duplicate it is not a copy by content.
    named = page("http://a/named-copy", body="same", simhash=0, canonical="http://a/end")
    found, _ = verdicts(end, middle, start, named)
    assert found == {"http://a/mid": "http://a/end", "http://a/named-copy": "http://a/end"}


def test_the_changed_flag_leaves_a_verdict_already_in_place():
    kept = page("http://a/p", body="h", segment=EARLIER)
    again = page("http://a/p/2", body="h", status=st.DUPLICATE, duplicate_of="http://a/p")
    moved = page("http://a/p/3", body="h", status=st.DUPLICATE, duplicate_of="http://a/x")
    rows = {r["url"]: r for r in all_verdicts(kept, again, moved)}
    assert rows["http://a/p/2"]["changed"] is False
    assert rows["http://a/p/3"]["changed"] is True
    assert rows["http://a/p/3"]["duplicate_of"] == "http://a/p"


def met_and_duplicates(a: dict, b: dict, conf: dict) -> bool:
    """The rules of crawldb.duplicates' docstring for one pair, written out plainly:
    the oracle the columnar search is held to."""
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


def oracle_copies(pages: dict, conf: dict, fresh) -> dict:
    """The best copy of every page, by comparing every pair of a page ``fresh`` and another."""
    best = {}
    for a in (p for p in pages.values() if fresh(p)):
        for b in pages.values():
            if a is b or not met_and_duplicates(a, b, conf):
                continue
            worse, better = (a, b) if keep_key(b) < keep_key(a) else (b, a)
            if worse["url"] not in best or keep_key(better) < keep_key(pages[best[worse["url"]]]):
                best[worse["url"]] = better["url"]
    return best


def random_pages(seed: int, count: int) -> dict:
    """Pages drawn from a few bodies, each body's SimHash and sketch a few bits or bytes
    from a few bases (so that pages meet in every way), some pages without a sketch (kept
    before sketches were) and some bodies without a SimHash."""
    draw = random.Random(seed)
    bases = [draw.getrandbits(64) - 2**63 for _ in range(6)]
    sketches = [bytes(draw.getrandbits(8) for _ in range(64)) for _ in range(5)]
    prints = {}
    for body in ["x", "y", None, *map(str, range(40))]:
        simhash = draw.choice(bases) ^ sum(
            1 << draw.randrange(64) for _ in range(draw.randrange(6))
        )
        sketch = bytearray(draw.choice(sketches))
        for _ in range(draw.choice((0, 4, 20, 40))):
            sketch[draw.randrange(64)] = draw.getrandbits(8)
        simhash = None if draw.random() < 0.1 else (simhash + 2**63) % 2**64 - 2**63
        prints[body] = (simhash, bytes(sketch))
    pages = {}
    for number in range(count):
        body = draw.choice(list(prints))
        simhash, sketch = prints[body]
        if body is None:  # no body hash: prints of their own
            simhash, sketch = draw.choice(list(prints.values()))
        url = f"http://h{draw.randrange(3)}/{'p' * draw.randrange(1, 4)}{number}"
        pages[url] = page(
            url,
            body=body,
            simhash=simhash,
            minhash=None if draw.random() < 0.3 else sketch,
            segment=draw.choice([ROUND, EARLIER]),
            score=draw.choice([None, 0.5, 1.0, 2.0]),
            fetched=draw.choice([None, 1, 2]),
        )
    return pages


def test_a_verdict_sets_the_status_and_target_of_the_row_it_judges_only():
    rows = pa.Table.from_pylist(
        [
            {"url": "u1", "status": st.FETCHED, "duplicate_of": None, "score": 1.0},
            {"url": "u2", "status": st.DUPLICATE, "duplicate_of": "u9", "score": 2.0},
            {"url": "u3", "status": st.FETCHED, "duplicate_of": None, "score": 3.0},
        ]
    )
    verdicts = pa.Table.from_pylist(
        [
            {"url": "u2", "status": st.FETCHED, "duplicate_of": None, "kind": "restored"},
            {"url": "u1", "status": st.DUPLICATE, "duplicate_of": "u3", "kind": "exact"},
            {"url": "u7", "status": st.DUPLICATE, "duplicate_of": "u3", "kind": "exact"},
        ]
    )
    judged = with_verdicts(rows, verdicts).to_pylist()
    assert [(r["url"], r["status"], r["duplicate_of"], r["score"]) for r in judged] == [
        ("u1", st.DUPLICATE, "u3", 1.0),
        ("u2", st.FETCHED, None, 2.0),
        ("u3", st.FETCHED, None, 3.0),
    ]


def test_the_rules_find_what_comparing_every_pair_finds():
    confs = [
        {**CONF, "dedup.canonical": False},
        {**CONF, "dedup.minhash.threshold": -1},
        {**CONF, "dedup.simhash.distance": -1},
        {**CONF, "dedup.simhash.distance": 8, "dedup.minhash.threshold": 0.9},
    ]
    for seed, conf in enumerate(confs):
        pages = random_pages(seed, 160)
        for everything in (False, True):
            fresh = (lambda p: True) if everything else (lambda p: p["segment"] == ROUND)
            expected = oracle_copies(pages, conf, fresh)
            assert len(expected) > 20, "the draw gives duplicates of every kind"
            rows = all_verdicts(*pages.values(), conf=conf, everything_fresh=everything)
            assert {r["url"]: r["duplicate_of"] for r in rows} == expected, (seed, everything)


def test_the_pages_a_round_meets_give_the_verdicts_of_every_page(monkeypatch):
    """``crawldb.duplicate_meetings``: the rules over the pages the round meets (read a
    slice at a time) give the verdicts over every content page; a round of few pages
    meets few of them. Pages name canonicals, some earlier ones marked duplicates."""
    monkeypatch.setattr(duplicate_meetings, "SLICE_ROWS", 37)
    for seed in range(4):
        draw = random.Random(seed)
        pages = list(random_pages(seed, 200).values())
        urls = [p["url"] for p in pages]
        for p in pages:
            if draw.random() < 0.15:
                p["canonical"] = draw.choice(urls)
            if p["segment"] == EARLIER and draw.random() < 0.1:
                p.update(status=st.DUPLICATE, duplicate_of=draw.choice(urls))
            if draw.random() < 0.8:  # most of the crawldb is not of the round
                p["segment"] = EARLIER
        whole = table(pages)
        met = duplicate_meetings.met_pages(whole, CONF, canonical=True)
        assert met.num_rows < whole.num_rows, seed
        assert len(set(met.column("url").to_pylist())) == met.num_rows
        key = lambda rows: sorted(map(str, rows.to_pylist()))  # noqa: E731
        assert key(round_verdicts(met, CONF)) == key(round_verdicts(whole, CONF)), seed


def test_a_key_set_holds_its_keys_and_no_other_value():
    """``KeySet.holds`` is ``np.isin`` over keys of every sign and size, the table's low
    bits shared by many keys and values (sets of 0 to 200,000 keys); ``unique_keys`` of
    sorted parts put end to end is ``np.unique``."""
    import numpy as np

    rng = np.random.default_rng(7)
    for size in (0, 1, 50, 5_000, 200_000):
        keys = rng.integers(-(2**63), 2**63 - 1, size=size, dtype=np.int64)
        low = keys[: size // 2] & np.int64(0xFFFF)  # values under the same table slots
        values = np.concatenate([keys, low, low + (1 << 40), rng.integers(-9, 9, 999)])
        values = values.astype(np.int64)
        parts = [np.unique(part) for part in np.array_split(keys, 7)]
        wanted = duplicate_meetings.unique_keys(np.concatenate(parts))
        assert np.array_equal(wanted, np.unique(keys)), size
        found = duplicate_meetings.KeySet(wanted).holds(values)
        assert np.array_equal(found, np.isin(values, keys)), size
        assert found[: len(keys)].all() and (size == 0 or not found.all())


def test_verdicts_split_by_key_fold_to_the_whole_tables():
    """The executor's grouping: the key rows cut into parts that each hold whole keys
    give, with the final rule over their union, the verdicts of the whole table."""
    import numpy as np

    from crawldb.duplicate_keys import probe_keys
    from crawldb.duplicates import content_verdicts, final_verdicts

    pages = table(random_pages(7, 200).values())
    conf = {**CONF, "dedup.canonical": False}
    k, wants, offers, index = probe_keys(pages, conf)
    parts = []
    for part in range(5):
        mine = (k % 5) == part
        rows = pages.take(index[mine])  # each key row carries its page, as on Spark
        keys = (k[mine], wants[mine], offers[mine], np.arange(int(mine.sum())))
        parts.append(content_verdicts(keys, rows, conf))
    folded = final_verdicts(pa.concat_tables(parts)).sort_by("url").to_pylist()
    assert folded == round_verdicts(pages, conf).sort_by("url").to_pylist()
    assert len(folded) > 20


def test_page_columns_are_the_tables_but_fresh():
    assert list(PAGE_COLUMNS) == SCHEMA.names[:-1]
