"""Crawl jobs submitted through the HTTP API (``api/``): the rules, without Spark or HTTP.

A job is a list of URLs an application hands in. Each URL goes through the same
cleaning as a link (``lib.url.filter.clean``: resolve, normalize, filter); the ones
refused are reported back with their reason. A URL's *state* within a job is read off
its crawldb row: queued until a fetch decides it, then fetched, redirected, failed (with
the crawldb's reason) or blocked by robots.txt. A job is finished when every URL is in a
final state, and then its callback (if any) is sent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from lib import vocabulary as st
from lib.url.filter import UrlFilter, clean

PRIORITIES = ("high", "medium", "low")

QUEUED = "queued"
FETCHED = "fetched"
REDIRECTED = "redirected"
FAILED = "failed"
BLOCKED_BY_ROBOTS = "blocked_by_robots"
CANCELLED = "cancelled"
STATES = (QUEUED, FETCHED, REDIRECTED, FAILED, BLOCKED_BY_ROBOTS, CANCELLED)
FINAL_STATES = {FETCHED, REDIRECTED, FAILED, BLOCKED_BY_ROBOTS, CANCELLED}

_FETCHED_STATUSES = {st.FETCHED, st.NOTMODIFIED, st.DUPLICATE}
_REDIRECT_STATUSES = {st.REDIR_PERM, st.REDIR_TEMP}


def clean_urls(urls: Iterable[str], url_filter: UrlFilter) -> tuple[list[str], list[dict]]:
    """``(accepted normalized URLs, in order and without repeats; rejected: [{"url",
    "reason"}])`` -- the same pipeline as links and seeds."""
    accepted: list[str] = []
    seen: set[str] = set()
    rejected: list[dict] = []
    for given in urls:
        url, reason = clean(given.strip(), url_filter)
        if url is None:
            rejected.append({"url": given, "reason": reason})
        elif url not in seen:
            seen.add(url)
            accepted.append(url)
    return accepted, rejected


def url_state(status: str | None, reason: str | None, cancelled: bool = False) -> str:
    """The state of one job URL from its crawldb status and reason (None: not injected
    yet)."""
    if status in _FETCHED_STATUSES:
        return FETCHED
    if status in _REDIRECT_STATUSES:
        return REDIRECTED
    if status == st.GONE:
        return BLOCKED_BY_ROBOTS if reason == st.REASON_ROBOTS_DENIED else FAILED
    return CANCELLED if cancelled else QUEUED


def job_status(states: Iterable[tuple[str, str | None]], cancelled: bool) -> dict:
    """Counts by state, failures by reason, and the job's overall status (``queued``,
    ``running``, ``done`` or ``cancelled``) from ``(state, reason)`` per URL."""
    pairs = list(states)
    counts = Counter(state for state, _ in pairs)
    reasons = Counter(reason or "unknown" for state, reason in pairs if state == FAILED)
    total = len(pairs)
    if cancelled:
        overall = CANCELLED
    elif total and all(state in FINAL_STATES for state, _ in pairs):
        overall = "done"
    elif counts.get(QUEUED, 0) == total:
        overall = QUEUED
    else:
        overall = "running"
    return {
        "status": overall,
        "urls": total,
        "counts": {state: counts.get(state, 0) for state in STATES},
        "failed_reasons": dict(sorted(reasons.items())),
    }


def retry_delay(attempt: int, base_s: float, cap_s: float) -> float:
    """Seconds to wait before callback attempt ``attempt`` (1 = first retry): doubling."""
    return min(cap_s, base_s * 2 ** (attempt - 1))
