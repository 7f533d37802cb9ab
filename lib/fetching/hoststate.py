"""What the fetcher learns about a host during a round: how long to pause, when to back off,
when to give up on it (plain Python, no I/O; times in seconds).

Pause before the next request to the host, after the end of the previous one::

    pause = max(fetcher.server.delay, Crawl-delay, min(factor * last response time, cap))

where "last response time" is the server's time on the host's last exchange alone (less
the crawler's own stalls, ``Exchange.server_seconds``), as Heritrix paces a host, and
``factor``/``cap`` are ``fetcher.adaptive.delay.factor``/``.max``: a server slow on every
answer gets a longer pause on every request, while one slow, trickled or cut answer
delays the next request once and the host is back at its pace as soon as it answers
fast again (a moving average kept one 20 s answer above the cap for several requests).
After a failure the pause doubles per consecutive failure (capped at
``fetcher.backoff.max``); a 429 or 503 with ``Retry-After`` waits that long instead.
``fetcher.max.exceptions.per.queue`` consecutive failures open the host's circuit: its
remaining URLs go back to the crawldb unchanged. A ``Retry-After`` longer than
``fetcher.max.crawl.delay`` opens it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lib.clock import http_date_ms

BACK_OFF_STATUSES = (429, 503)


@dataclass(frozen=True)
class Verdict:
    """What to do after one request to a host."""

    pause: float  # seconds from the end of this request to the start of the next
    retry_url: bool = False  # queue the same URL again this round
    open_circuit: bool = False  # skip the host's remaining URLs this round


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date), or ``None``."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    moment_ms = http_date_ms(text)
    return None if moment_ms is None else max(0.0, moment_ms / 1000 - now)


class HostState:
    """Delay, back-off and circuit breaker of one host."""

    def __init__(self, conf: Mapping[str, Any]):
        self.base_delay = conf["fetcher.server.delay"]
        self.max_crawl_delay = conf["fetcher.max.crawl.delay"]
        self.factor = conf["fetcher.adaptive.delay.factor"]
        self.adaptive_cap = conf["fetcher.adaptive.delay.max"]
        self.backoff_cap = conf["fetcher.backoff.max"]
        self.max_failures = conf["fetcher.max.exceptions.per.queue"]
        self.crawl_delay: float | None = None
        self.response_time: float | None = None  # of the last exchange, seconds
        self.failures = 0

    def delay(self) -> float:
        """The least pause between two requests while the host is healthy."""
        adaptive = 0.0
        if self.response_time is not None:
            adaptive = min(self.factor * self.response_time, self.adaptive_cap)
        return max(self.polite_delay(), adaptive)

    def after(
        self,
        seconds: float,
        status: int | None,
        failed: bool,
        retry_after: float | None = None,
    ) -> Verdict:
        """Record one request (``failed``: 5xx, 429, timeout, connection error) and decide."""
        self._observe(seconds)
        if not failed:
            self.failures = 0
            return Verdict(self.delay())
        self.failures += 1
        if retry_after is not None and retry_after > self.max_crawl_delay:
            return Verdict(self.delay(), open_circuit=True)
        if 0 < self.max_failures <= self.failures:
            return Verdict(self.delay(), open_circuit=True)
        backoff = min(self.delay() * 2**self.failures, max(self.backoff_cap, self.delay()))
        if status in BACK_OFF_STATUSES:
            pause = max(self.delay(), retry_after) if retry_after is not None else backoff
            return Verdict(pause, retry_url=True)
        return Verdict(backoff)

    def _observe(self, seconds: float) -> None:
        self.response_time = seconds

    def polite_delay(self) -> float:
        """The pause the host asks for or is configured with, without the adaptive part."""
        return max(self.base_delay, self.crawl_delay or 0.0)


def now_utc() -> float:
    """Wall-clock time in epoch seconds (for Retry-After dates)."""
    return datetime.now(tz=UTC).timestamp()
