"""The fetch table's rows a fetch task gives: one per URL, one per robots.txt fetched
(``crawldb.schema.FETCH`` columns, times in epoch ms)."""

from __future__ import annotations

from typing import Any

from lib import vocabulary as st
from lib.exchange import Exchange
from lib.fetching.tasks import FetchItem, RobotsTask
from lib.url.normalize import host_of
from lib.vocabulary import ORIGIN_ROBOTS, REASON_PRIVATE


def fetch_row(
    task: FetchItem, outcome: str, reason: str | None, now: float, exchange: Exchange | None = None
) -> dict[str, Any]:
    """The row of one URL: its outcome and reason, and what the exchange brought, if
    one was made (``now``: the decision's time, epoch seconds, when none was)."""
    row = {
        "url": task.url,
        "host": host_of(task.url),
        "fetch_status": outcome,
        "reason": reason,
        "depth": task.depth,
        "score": task.score,
        "origin": task.origin,
        "attempts": task.attempts + (1 if exchange is not None else 0),
        "truncated": False,
        "fetched_at": int(now * 1000),
    }
    if exchange is not None:
        row.update(exchange_columns(exchange))
    return row


def answered_row(task: FetchItem, exchange: Exchange, now: float) -> dict[str, Any]:
    """The row of a URL whose request ended: a failure (permanent for an invalid URL or
    a refused address, else to retry), or the outcome of its HTTP status."""
    if exchange.error is not None:
        permanent = exchange.error in (st.REASON_INVALID_URL, REASON_PRIVATE)
        outcome = st.NOT_FOUND if permanent else st.RETRY
        return fetch_row(task, outcome, exchange.error, now, exchange)
    code = exchange.status
    reason = None if code == 200 else st.http_reason(code)
    return fetch_row(task, st.outcome_of_http(code), reason, now, exchange)


def robots_row(
    host: str, task: RobotsTask, exchange: Exchange, status: int | None, now: float
) -> dict:
    """The row of one hop of ``host``'s robots.txt, under the hop's own URL (so that its
    WARC pointer is its own record's) and the host's name (the robots cache's key)."""
    hop = FetchItem(task.url, 0, 0.0, origin=ORIGIN_ROBOTS, hops=task.hops)
    row = fetch_row(hop, st.RETRY, None, now)
    row.update(exchange_columns(exchange))
    row["host"] = host
    row["fetch_status"] = st.outcome_of_http(status) if status else st.RETRY
    row["reason"] = exchange.error or (None if status == 200 else st.http_reason(status))
    return row


def failed(exchange: Exchange) -> bool:
    """A failure that counts against the host (back-off, circuit breaker)."""
    if exchange.error is not None:
        return exchange.error not in (st.REASON_INVALID_URL,)
    return exchange.status == 429 or exchange.status >= 500


def exchange_columns(exchange: Exchange) -> dict[str, Any]:
    """Fetch-table columns that come from an exchange."""
    return {
        "http_status": exchange.status,
        "fetched_at": int(exchange.started * 1000),
        "duration_ms": exchange.duration_ms,
        "content_type": exchange.header("Content-Type"),
        "content": exchange.body if exchange.status is not None else None,
        "content_length": len(exchange.body),
        "truncated": exchange.truncated,
        "headers": {k.lower(): v for k, v in exchange.response_headers},
        "etag": exchange.header("ETag"),
        "last_modified": exchange.header("Last-Modified"),
        "error_detail": exchange.error_detail,
        "ip": exchange.peer,
    }
