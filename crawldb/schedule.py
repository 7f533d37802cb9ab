"""When a URL is due again: fetch intervals and retry waits (README, data flow step 5).

All times are epoch milliseconds, intervals seconds. The skeleton schedule is Nutch's
DefaultFetchSchedule: next fetch = fetch time + the row's fetch interval; a transient
failure waits ``db.fetch.retry.interval`` instead.
"""

from __future__ import annotations

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
