"""When a URL is due again: fetch intervals and retry waits (docs/architecture.md, step 5).

All times are epoch milliseconds, intervals seconds. Next fetch = fetch time + the row's
fetch interval; a transient failure waits ``db.fetch.retry.interval`` instead.

The interval itself (``db.fetch.schedule.class``):

- ``default`` (Nutch's DefaultFetchSchedule): never changes;
- ``adaptive`` (Nutch's AdaptiveFetchSchedule, the default): after each re-fetch that
  could compare content (a 200 with a known previous hash, or a 304), the interval
  shrinks by ``dec_rate`` when the content changed and grows by ``inc_rate`` when not,
  within ``[min_interval, max_interval]`` and within the band of the page's observed
  change rate (changes / re-fetches): above 0.8 at most 1 day, above 0.3 from 1 to 7
  days, above 0.1 from 7 to 14 days, else at least 14 days (``...adaptive.bands``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MS_PER_SECOND = 1000
MS_PER_DAY = 86_400_000


def next_fetch_time(fetched_at_ms: int, interval_s: int) -> int:
    """Next due time after a completed fetch."""
    return fetched_at_ms + interval_s * MS_PER_SECOND


def retry_fetch_time(fetched_at_ms: int, conf: Mapping[str, Any]) -> int:
    """Next due time after a transient failure."""
    return fetched_at_ms + conf["db.fetch.retry.interval"] * MS_PER_SECOND


def retries_exhausted(retries: int, conf: Mapping[str, Any]) -> bool:
    """True when a URL has failed transiently as often as ``db.fetch.retry.max`` allows."""
    return retries >= conf["db.fetch.retry.max"]


def shifted_now(now_ms: int, add_days: float) -> int:
    """The clock of generate: ``--adddays N`` pretends it is N days later (as in Nutch)."""
    return now_ms + int(add_days * MS_PER_DAY)


def next_interval(interval_s: int, changed: bool, changes: int, revisits: int, conf) -> int:
    """The fetch interval after a re-fetch that found the content ``changed`` or not;
    ``changes`` and ``revisits`` count this re-fetch already."""
    kind = conf["db.fetch.schedule.class"]
    if kind == "default":
        return interval_s
    if kind != "adaptive":
        raise ValueError(f"db.fetch.schedule.class must be default or adaptive, not {kind!r}")
    prefix = "db.fetch.schedule.adaptive."
    rate = conf[prefix + "dec_rate"] if changed else conf[prefix + "inc_rate"]
    stepped = interval_s * (1 - rate if changed else 1 + rate)
    low, high = change_band(changes / revisits if revisits else None, conf)
    low = max(low, conf[prefix + "min_interval"])
    high = min(high, conf[prefix + "max_interval"])
    return int(round(min(max(stepped, low), high)))


def change_band(rate: float | None, conf) -> tuple[float, float]:
    """Shortest and longest interval (s) for a page changing at ``rate`` (None: unknown)."""
    if rate is None:
        return 0.0, math.inf
    lower = 0.0
    for threshold, upper in sorted(conf["db.fetch.schedule.adaptive.bands"], reverse=True):
        if rate > threshold:
            return lower, float(upper)
        lower = float(upper)
    return lower, math.inf
