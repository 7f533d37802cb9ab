"""Wall-clock time in epoch milliseconds, elapsed seconds, and HTTP dates."""

from __future__ import annotations

import time
from datetime import UTC
from email.utils import parsedate_to_datetime


class Stopwatch:
    """Elapsed seconds since creation."""

    def __init__(self):
        self.start = time.monotonic()

    @property
    def seconds(self) -> float:
        """Seconds elapsed."""
        return time.monotonic() - self.start


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return int(time.time() * 1000)


def http_date_ms(text: str | None) -> int | None:
    """An HTTP date (``Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT``, RFC 9110 5.6.7)
    in epoch milliseconds; None when absent or not a date."""
    if not text:
        return None
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)
