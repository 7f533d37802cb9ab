"""Wall-clock time in epoch milliseconds, and elapsed seconds."""

from __future__ import annotations

import time


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
