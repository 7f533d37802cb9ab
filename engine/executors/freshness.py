"""Freshness of the crawldb at a moment: what is due, overdue, fresh, and how old.

- ``due``: share of all URLs whose next fetch time has come;
- ``overdue``: share of all URLs due for a whole interval already (two intervals without
  a fetch: the crawl is not keeping up);
- ``fresh``: share of the pages (URLs with content: fetched, notmodified, duplicate)
  fetched within their interval;
- ``age_days``: pages by days since their last fetch.

updatedb records them after each round (``_updated.done``) and ``readdb --stats`` shows
them for now.
"""

from __future__ import annotations

from lib import vocabulary as st

AGE_BUCKETS = ((1, "<1"), (7, "1-7"), (30, "7-30"), (90, "30-90"))  # upper bound in days
OLDEST = ">=90"
PAGE_STATUSES = (st.FETCHED, st.NOTMODIFIED, st.DUPLICATE)


def freshness(crawldb, now_ms: int) -> dict:
    """The freshness figures of a crawldb frame at ``now_ms``."""
    from pyspark.sql import functions as F

    now = F.lit(now_ms)
    due_at = F.unix_millis("fetch_time")
    interval_ms = F.col("fetch_interval").cast("long") * 1000
    page = F.col("status").isin(*PAGE_STATUSES)
    age_days = (now - F.unix_millis("last_fetch_time")) / 86_400_000
    bucket = F.lit(OLDEST)
    for upper, name in reversed(AGE_BUCKETS):
        bucket = F.when(age_days < upper, name).otherwise(bucket)
    rows = crawldb.select(
        (due_at <= now).alias("due"),
        (due_at + interval_ms <= now).alias("overdue"),
        page.alias("page"),
        (page & (F.unix_millis("last_fetch_time") + interval_ms >= now)).alias("fresh"),
        F.when(page, bucket).alias("age"),
    )
    counted = rows.groupBy("due", "overdue", "page", "fresh", "age").count().collect()
    total = sum(r["count"] for r in counted)
    pages = sum(r["count"] for r in counted if r["page"])
    ages = {name: 0 for _, name in AGE_BUCKETS} | {OLDEST: 0}
    for r in counted:
        if r["age"] is not None:
            ages[r["age"]] += r["count"]
    return {
        "urls": total,
        "pages": pages,
        "due": _share(sum(r["count"] for r in counted if r["due"]), total),
        "overdue": _share(sum(r["count"] for r in counted if r["overdue"]), total),
        "fresh": _share(sum(r["count"] for r in counted if r["fresh"]), pages),
        "age_days": ages,
    }


def freshness_of(rows, now_ms: int) -> dict:
    """``freshness``'s figures in plain Python: ``rows`` are (status, fetch_time,
    fetch_interval, last_fetch_time) tuples, times in epoch ms; a null compares as
    Spark's does (false), and a page never fetched is in the oldest age bucket."""
    total = pages = due = overdue = fresh = 0
    ages = {name: 0 for _, name in AGE_BUCKETS} | {OLDEST: 0}
    for status, due_at, interval, last in rows:
        total += 1
        interval_ms = None if interval is None else interval * 1000
        due += due_at is not None and due_at <= now_ms
        overdue += None not in (due_at, interval_ms) and due_at + interval_ms <= now_ms
        if status not in PAGE_STATUSES:
            continue
        pages += 1
        fresh += None not in (last, interval_ms) and last + interval_ms >= now_ms
        ages[_age_bucket(None if last is None else (now_ms - last) / 86_400_000)] += 1
    return {
        "urls": total,
        "pages": pages,
        "due": _share(due, total),
        "overdue": _share(overdue, total),
        "fresh": _share(fresh, pages),
        "age_days": ages,
    }


def _age_bucket(days: float | None) -> str:
    for upper, name in AGE_BUCKETS:
        if days is not None and days < upper:
            return name
    return OLDEST


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0
