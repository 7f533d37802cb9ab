"""Re-crawl schedule: Nutch's adaptive interval within change-rate bands, and the counts
kept per URL (crawldb/schedule.py, crawldb/merge.py)."""

import pytest

from crawldb.merge import apply_fetch, merge_links, new_row
from crawldb.schedule import change_band, next_interval
from lib import vocabulary as st
from lib.config import load_config

CONF = load_config()
DAY = 86_400
T0 = 1_700_000_000_000


@pytest.mark.parametrize(
    ("rate", "band"),
    [
        (1.0, (0, DAY)),
        (0.81, (0, DAY)),
        (0.8, (DAY, 7 * DAY)),  # "above 0.8": 0.8 itself is the next band
        (0.31, (DAY, 7 * DAY)),
        (0.3, (7 * DAY, 14 * DAY)),
        (0.11, (7 * DAY, 14 * DAY)),
        (0.1, (14 * DAY, float("inf"))),
        (0.0, (14 * DAY, float("inf"))),
        (None, (0, float("inf"))),
    ],
)
def test_change_rate_bands(rate, band):
    assert change_band(rate, CONF) == band


def test_unchanged_grows_by_inc_rate_and_changed_shrinks_by_dec_rate():
    assert next_interval(20 * DAY, False, 0, 1, CONF) == 28 * DAY  # x 1.4, band >= 14 days
    assert next_interval(5 * DAY, True, 1, 2, CONF) == 4 * DAY  # rate 0.5: x 0.8 in 1-7 days


def test_band_and_global_clamps():
    assert next_interval(30 * DAY, True, 1, 1, CONF) == DAY  # rate 1: at most a day
    assert next_interval(DAY, False, 0, 3, CONF) == 14 * DAY  # rate 0: at least 14 days
    assert next_interval(300 * DAY, False, 0, 9, CONF) == 365 * DAY  # max_interval
    assert next_interval(70, True, 9, 9, CONF) == 60  # min_interval (60 s)
    assert next_interval(100, True, 1, 1, {**CONF, "db.fetch.schedule.class": "default"}) == 100
    with pytest.raises(ValueError, match="db.fetch.schedule.class"):
        next_interval(100, True, 1, 1, {**CONF, "db.fetch.schedule.class": "sometimes"})


def fetched_row(**changes):
    row = new_row("http://a.test/x", "a.test", T0, score=1.0, depth=0, fetch_interval=30 * DAY)
    row.update(status=st.FETCHED, content_hash="h1", fetch_count=1, **changes)
    return row


def refetch(outcome, code, content_hash, at):
    return {
        "url": "http://a.test/x",
        "fetch_status": outcome,
        "reason": None,
        "http_status": code,
        "fetched_at": at,
        "content_hash": content_hash,
        "simhash": 1,
        "title": "T",
        "etag": '"v1"',
        "last_modified": None,
        "content_type": "text/html",
        "redirect_to": None,
    }


def test_refetches_count_changes_and_adapt_the_next_fetch_time():
    at = T0 + 30 * DAY * 1000
    same = apply_fetch(fetched_row(), refetch(st.SUCCESS, 200, "h1", at), "s2", CONF)
    assert (same["revisit_count"], same["change_count"]) == (1, 0)
    assert same["fetch_interval"] == 42 * DAY and same["fetch_time"] == at + 42 * DAY * 1000
    not_modified = apply_fetch(fetched_row(), refetch(st.NOT_MODIFIED, 304, None, at), "s2", CONF)
    assert not_modified["status"] == st.NOTMODIFIED and not_modified["content_hash"] == "h1"
    assert (not_modified["revisit_count"], not_modified["change_count"]) == (1, 0)
    assert not_modified["fetch_interval"] == 42 * DAY
    changed = apply_fetch(fetched_row(), refetch(st.SUCCESS, 200, "h2", at), "s2", CONF)
    assert (changed["revisit_count"], changed["change_count"]) == (1, 1)
    assert changed["fetch_interval"] == DAY and changed["fetch_time"] == at + DAY * 1000


def test_a_first_fetch_and_a_fixed_interval_do_not_adapt():
    first = new_row("http://a.test/x", "a.test", T0, score=1.0, depth=0, fetch_interval=9 * DAY)
    done = apply_fetch(first, refetch(st.SUCCESS, 200, "h1", T0), "s1", CONF)
    assert done["fetch_interval"] == 9 * DAY and done["revisit_count"] == 0
    fixed = fetched_row(fixed_interval=True)
    kept = apply_fetch(fixed, refetch(st.SUCCESS, 200, "h2", T0), "s2", CONF)
    assert kept["fetch_interval"] == 30 * DAY and kept["change_count"] == 1


def test_sitemap_changefreq_sets_a_new_url_interval_and_a_newer_lastmod_makes_it_due():
    links = {"depth": 1, "score": 0.5, "dedup_key": None, "changefreq": 7 * DAY, "lastmod": None}
    fresh = merge_links(None, "http://a.test/new", "a.test", links, T0, CONF)
    assert fresh["fetch_interval"] == 7 * DAY and fresh["fetch_time"] == T0
    plain = merge_links(
        None, "http://a.test/new", "a.test", {**links, "changefreq": None}, T0, CONF
    )
    assert plain["fetch_interval"] == CONF["db.fetch.interval.default"]
    known = fetched_row(last_fetch_time=T0, fetch_time=T0 + 30 * DAY * 1000)
    now = T0 + DAY * 1000
    older = merge_links(known, known["url"], "a.test", {**links, "lastmod": T0 - 1}, now, CONF)
    assert older["fetch_time"] == known["fetch_time"]  # not changed since our fetch
    newer = merge_links(known, known["url"], "a.test", {**links, "lastmod": T0 + 1}, now, CONF)
    assert newer["fetch_time"] == now  # changed since: due at once
    assert newer["fetch_interval"] == known["fetch_interval"]  # a known URL keeps its interval
