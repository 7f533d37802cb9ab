"""Per-URL merge rules as a matrix: old status x fetch outcome (as Nutch's TestCrawlDbStates)."""

import pytest

from crawldb.merge import apply_fetch, merge_inject, new_row, site_canonical, update_row
from crawldb.schedule import MS_PER_DAY
from lib import vocabulary as st
from lib.config import load_config

CONF = load_config()
T0 = 1_700_000_000_000
FETCHED_AT = T0 + 1000
INTERVAL_MS = CONF["db.fetch.interval.default"] * 1000
RETRY_MS = CONF["db.fetch.retry.interval"] * 1000


def row(status=st.UNFETCHED, **changes):
    base = new_row("http://a.test/x", "a.test", T0, score=1.0, depth=1, fetch_interval=2592000)
    base.update(status=status, **changes)
    return base


def fetch(outcome, code=None, **extra):
    result = {
        "url": "http://a.test/x",
        "fetch_status": outcome,
        "reason": None if code in (None, 200) else f"http_{code}",
        "http_status": code,
        "fetched_at": FETCHED_AT,
        "content_hash": "h1" if outcome == st.SUCCESS else None,
        "simhash": 5 if outcome == st.SUCCESS else None,
        "title": "T" if outcome == st.SUCCESS else None,
        "etag": None,
        "last_modified": None,
        "content_type": "text/html",
        "redirect_to": None,
        "depth": 1,
        "score": 1.0,
    }
    result.update(extra)
    return result


OLD_STATUSES = [st.UNFETCHED, st.FETCHED, st.GONE, st.REDIR_PERM, st.NOTMODIFIED]
OUTCOMES = [
    (st.SUCCESS, 200, st.FETCHED, INTERVAL_MS),
    (st.MOVED, 301, st.REDIR_PERM, INTERVAL_MS),
    (st.TEMP_MOVED, 302, st.REDIR_TEMP, INTERVAL_MS),
    (st.NOT_MODIFIED, 304, st.NOTMODIFIED, INTERVAL_MS),
    (st.NOT_FOUND, 404, st.GONE, INTERVAL_MS),
    (st.ROBOTS_DENIED, None, st.GONE, INTERVAL_MS),
]


@pytest.mark.parametrize("old_status", OLD_STATUSES)
@pytest.mark.parametrize(("outcome", "code", "new_status", "wait_ms"), OUTCOMES)
def test_transition_matrix(old_status, outcome, code, new_status, wait_ms):
    old = row(old_status, retries=2, fetch_count=3)
    new = apply_fetch(old, fetch(outcome, code), "seg1", CONF)
    assert new["status"] == new_status
    assert new["fetch_time"] == FETCHED_AT + wait_ms
    assert new["retries"] == 0
    assert new["segment"] == "seg1" and new["last_fetch_time"] == FETCHED_AT
    assert new["fetch_count"] == (3 if outcome == st.ROBOTS_DENIED else 4)


@pytest.mark.parametrize("old_status", OLD_STATUSES)
def test_transient_failures_retry_then_give_up(old_status):
    retry_max = CONF["db.fetch.retry.max"]
    current = row(old_status, retries=0, fetch_count=0)
    for attempt in range(1, retry_max):
        current = apply_fetch(current, fetch(st.RETRY, 503), f"seg{attempt}", CONF)
        assert current["status"] == old_status  # still what it was, just due again later
        assert current["retries"] == attempt
        assert current["fetch_time"] == FETCHED_AT + RETRY_MS
    current = apply_fetch(current, fetch(st.RETRY, 503), "last", CONF)
    assert current["status"] == st.GONE and current["reason"] == "http_503"
    assert current["retries"] == retry_max


def test_success_records_fingerprints_and_change_time():
    first = apply_fetch(row(), fetch(st.SUCCESS, 200), "s1", CONF)
    assert first["content_hash"] == "h1" and first["simhash"] == 5 and first["title"] == "T"
    assert first["modified_time"] == FETCHED_AT
    later = fetch(st.SUCCESS, 200, fetched_at=FETCHED_AT + MS_PER_DAY)
    same = apply_fetch(first, later, "s2", CONF)
    assert same["modified_time"] == FETCHED_AT  # same hash: not changed
    changed = apply_fetch(first, {**later, "content_hash": "h2"}, "s2", CONF)
    assert changed["modified_time"] == FETCHED_AT + MS_PER_DAY


def test_a_capture_is_pointed_at_and_its_last_modified_is_a_time():
    """Issue 40: the crawldb row joins to the archive (segment, file, offset of the
    latest capture with a body) and carries Last-Modified as a time too."""
    sent = "Tue, 14 Nov 2023 22:13:20 GMT"
    page = fetch(st.SUCCESS, 200, warc_file="w.warc.gz", warc_offset=123, last_modified=sent)
    first = apply_fetch(row(), page, "s1", CONF)
    assert (first["capture_segment"], first["warc_file"], first["warc_offset"]) == (
        "s1",
        "w.warc.gz",
        123,
    )
    assert first["last_modified_time"] == 1_700_000_000_000
    unchanged = fetch(st.NOT_MODIFIED, 304, fetched_at=FETCHED_AT + MS_PER_DAY)
    later = apply_fetch(
        first, {**unchanged, "warc_file": "x.warc.gz", "warc_offset": 9}, "s2", CONF
    )
    assert (later["capture_segment"], later["warc_offset"]) == ("s1", 123)  # a 304: no body
    assert later["last_modified_time"] == 1_700_000_000_000  # the validator kept
    garbled = apply_fetch(row(), {**page, "last_modified": "yesterday"}, "s1", CONF)
    assert garbled["last_modified"] == "yesterday" and garbled["last_modified_time"] is None


def test_skipped_host_leaves_the_row_unchanged():
    old = row()
    assert apply_fetch(old, fetch(st.SKIPPED), "s1", CONF) == old


def test_update_is_idempotent_per_segment():
    old = row()
    once = update_row(
        "http://a.test/x",
        "a.test",
        old,
        fetch(st.RETRY, 503),
        None,
        segment="s1",
        now_ms=T0,
        conf=CONF,
    )
    assert once["retries"] == 1
    again = update_row(
        "http://a.test/x",
        "a.test",
        once,
        fetch(st.RETRY, 503),
        None,
        segment="s1",
        now_ms=T0,
        conf=CONF,
    )
    assert again is None


def test_links_add_new_urls_and_keep_known_scores():
    links = {"depth": 3, "score": 0.25}
    created = update_row(
        "http://a.test/n", "a.test", None, None, links, segment="s1", now_ms=T0, conf=CONF
    )
    assert created["status"] == st.UNFETCHED and created["depth"] == 3
    assert created["score"] == 0.25 and created["fetch_time"] == T0
    known = row(st.FETCHED, depth=5, score=2.0)
    merged = update_row(
        known["url"], "a.test", known, None, links, segment="s1", now_ms=T0, conf=CONF
    )
    assert merged["depth"] == 3 and merged["score"] == 2.0
    assert (
        update_row(known["url"], "a.test", merged, None, links, segment="s1", now_ms=T0, conf=CONF)
        is None
    )


def test_reinject_keeps_history():
    fetched = apply_fetch(row(), fetch(st.SUCCESS, 200), "s1", CONF)
    seed = new_row(fetched["url"], "a.test", T0 + 5, score=9.0, depth=0, fetch_interval=60)
    kept = merge_inject(fetched, seed, update=False)
    assert kept["status"] == st.FETCHED and kept["content_hash"] == "h1"
    assert kept["score"] == fetched["score"] and kept["depth"] == 0
    updated = merge_inject(fetched, seed, update=True)
    assert updated["score"] == 9.0 and updated["fetch_interval"] == 60
    assert updated["status"] == st.FETCHED and updated["fetch_count"] == fetched["fetch_count"]


def test_duplicate_stays_duplicate_and_waits_longer_until_it_changes():
    factor = CONF["db.fetch.interval.duplicate.factor"]
    duplicate = row(st.DUPLICATE, content_hash="h1", duplicate_of="http://a.test/kept")
    same = apply_fetch(duplicate, fetch(st.SUCCESS, 200), "s1", CONF)
    assert same["status"] == st.DUPLICATE and same["duplicate_of"] == "http://a.test/kept"
    assert same["fetch_interval"] > duplicate["fetch_interval"]  # unchanged: adapted longer
    assert same["fetch_time"] == FETCHED_AT + int(same["fetch_interval"] * 1000 * factor)
    changed = apply_fetch(duplicate, fetch(st.SUCCESS, 200, content_hash="h2"), "s1", CONF)
    assert changed["status"] == st.FETCHED and changed["duplicate_of"] is None
    assert changed["fetch_interval"] < duplicate["fetch_interval"]
    assert changed["fetch_time"] == FETCHED_AT + changed["fetch_interval"] * 1000


def test_only_a_same_site_canonical_other_than_the_page_is_kept():
    outcomes = {}
    # page http://a.test/x names: its own site, a subdomain of it, another site, nothing
    for canonical in [
        "http://a.test/print",
        "http://www.a.test/y",
        "http://other.test/y",
        "http://cdn.a.test/z",
        None,
    ]:
        page = apply_fetch(row(), fetch(st.SUCCESS, 200, canonical=canonical), "s1", CONF)
        outcomes[canonical] = page["canonical"]
    assert outcomes == {
        "http://a.test/print": "http://a.test/print",
        "http://www.a.test/y": "http://www.a.test/y",
        "http://other.test/y": None,
        "http://cdn.a.test/z": "http://cdn.a.test/z",
        None: None,
    }
    assert site_canonical("http://a.test/x", "a.test", "http://a.test/x") is None


def test_a_refetch_of_the_same_payload_keeps_pointing_at_the_record_with_the_body():
    """Issue 40: an identical-payload revisit holds headers only, so the crawldb's
    capture stays the earlier response (its date is the revisit's WARC-Refers-To-Date);
    a new payload moves it."""
    page = fetch(st.SUCCESS, 200, warc_file="w1.warc.gz", warc_offset=10, payload_digest="sha1:A")
    first = apply_fetch(row(), page, "s1", CONF)
    assert first["capture_time"] == FETCHED_AT and first["payload_digest"] == "sha1:A"
    again = {**page, "fetched_at": FETCHED_AT + MS_PER_DAY, "warc_file": "w2.warc.gz"}
    same = apply_fetch(first, again, "s2", CONF)
    assert same["last_fetch_time"] == FETCHED_AT + MS_PER_DAY and same["segment"] == "s2"
    kept = ("capture_segment", "warc_file", "warc_offset", "capture_time", "payload_digest")
    assert [same[k] for k in kept] == ["s1", "w1.warc.gz", 10, FETCHED_AT, "sha1:A"]
    changed = apply_fetch(same, {**again, "payload_digest": "sha1:B"}, "s3", CONF)
    assert [changed[k] for k in kept] == [
        "s3",
        "w2.warc.gz",
        10,
        FETCHED_AT + MS_PER_DAY,
        "sha1:B",
    ]


@pytest.mark.spark
def test_new_links_made_by_columns_are_the_rows_update_row_makes(spark):
    import random

    import pyarrow as pa

    from crawldb.merge import changed_of_touched, new_link_rows
    from crawldb.schema import CRAWLDB
    from engine.tables.arrow import schemas
    from lib.url.normalize import UrlNormalizer

    _, schema = schemas(CRAWLDB)  # the session converts Spark's types to Arrow's
    rng = random.Random(7)
    links = [
        {
            "url": f"http://h{n % 5}.test/{n}",
            "dedup_key": rng.choice([None, f"http://h{n % 5}.test/k{n}"]),
            "host": f"h{n % 5}.test",
            "depth": rng.randrange(0, 4),
            "score": rng.random(),
            "redirect": rng.random() < 0.2,
            "lastmod": rng.choice([None, T0 - 5]),
            "changefreq": rng.choice([None, 3600, 86400]),
        }
        for n in range(60)
    ]
    expected = [
        update_row(link["url"], link["host"], None, None, link, segment="s1", now_ms=T0, conf=CONF)
        for link in links
    ]
    made = new_link_rows(pa.Table.from_pylist(links), T0, CONF, schema)
    assert made.schema == schema
    got = made.to_pylist()
    for one in got:
        one["metadata"] = dict(one["metadata"])
    assert got == expected
    # Among other touched URLs (here a known one), the new ones are made the same.
    known = row(depth=9)
    link_type = pa.struct(list(pa.Table.from_pylist(links).schema))
    touched = pa.table(
        {
            "url": [link["url"] for link in links] + [known["url"]],
            "fetch": pa.nulls(len(links) + 1, pa.struct([("url", pa.string())])),
            "links": pa.array([*links, {**links[0], "depth": 1}], link_type),
            "old": pa.array([None] * len(links) + [known], pa.struct(list(schema))),
        }
    )
    mixed = changed_of_touched(CONF, "s1", T0, UrlNormalizer(CONF), touched, schema).to_pylist()
    by_url = {one["url"]: one for one in mixed}
    assert len(mixed) == len(links) + 1
    assert by_url[known["url"]]["depth"] == 1 and by_url[known["url"]]["status"] == st.UNFETCHED
    for one in expected:
        assert by_url[one["url"]]["dedup_key"] == one["dedup_key"]
        assert by_url[one["url"]]["fetch_interval"] == one["fetch_interval"]
