"""The end of a fetch round: when its last requests belong to a few hosts whose queues
(URLs x pause) would hold it long after the rest finished, their excess URLs are
deferred to the next round instead (reason ``deferred``), as no hand-set time limit is
needed (compare Nutch's ``fetcher.timelimit.mins``, StormCrawler's
``fetcher.timeout.queue``). Politeness is untouched: a deferred URL is simply not asked.

The rule, in seconds from the round's (the task's) first request::

    budget = fetcher.round.tail.factor * t95 + fetcher.round.tail.slack

where ``t95`` is when 95% of the round's requests will have started: known once they
have, else projected from each host's queue (its next start, then one request per pace,
the pace being its pause plus its last response time) and from the rate so far (no host
can beat the task's own throughput). A host keeps the URLs whose projected start fits
the budget; the rest of its queue, from the back, is deferred. A request still on its
way when the budget is spent, after running ``fetcher.round.tail.slack`` seconds (a
page trickling for minutes), is cut there as ``http.time.limit`` would cut it: its
body so far is kept, marked truncated. ``generate`` plans rounds with the same budget
(``crawldb.partitioning``), so deferring is the exception: for an answer slower than
planned, a host that started failing, links found in the round.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BULK_SHARE = 0.95  # the share of a round's requests whose end the budget is measured from
HOLDING_NAMED = 3  # hosts named in the progress line as holding the round
# A host finishing this long after the 95% point holds the round. Unit: seconds.
HOLDING_AFTER = 1.0


@dataclass(frozen=True)
class HostOutlook:
    """What a host still has to do: ``queued`` requests, the first in ``start`` seconds
    from now, then one every ``pace`` seconds."""

    host: str
    queued: int
    start: float
    pace: float

    def finish(self) -> float:
        """Seconds from now until its last queued request starts."""
        return self.start + (self.queued - 1) * self.pace

    def started_within(self, window: float) -> int:
        """How many of its requests start within ``window`` seconds from now."""
        if window < self.start:
            return 0
        if self.pace <= 0:
            return self.queued
        return min(self.queued, math.floor((window - self.start) / self.pace) + 1)


def round_budget(t95: float, conf: Mapping[str, Any]) -> float:
    """Seconds a round may take when 95% of its requests start by ``t95``."""
    return conf["fetcher.round.tail.factor"] * t95 + conf["fetcher.round.tail.slack"]


@dataclass(frozen=True)
class TailPlan:
    """The outcome of one look at a round: URLs to keep per host (hosts not named keep
    all), the projected end, the hosts that hold the round, and the seconds left of its
    budget (``math.inf`` while the queues fit whatever the 95% point turns out to be)."""

    keep: dict[str, int]
    eta: float  # seconds from now until the last kept request starts
    holding: list[str]
    left: float = math.inf


def plan_tail(
    outlooks: Sequence[HostOutlook],
    starts: Sequence[float],
    elapsed: float,
    conf: Mapping[str, Any],
) -> TailPlan:
    """Decide the round's tail. ``starts``: the start of every request made so far, in
    seconds from the first, ascending; ``elapsed``: seconds since the first."""
    if not starts or elapsed <= 0:
        return TailPlan({}, 0.0, [])
    queued = sum(o.queued for o in outlooks)
    rate = len(starts) / elapsed
    last = max((o.finish() for o in outlooks), default=0.0)
    by_rate = queued / rate
    target = math.ceil(BULK_SHARE * (len(starts) + queued))
    known = len(starts) >= target
    if not known and last <= round_budget(elapsed, conf) - elapsed:
        return TailPlan({}, max(last, by_rate), [])  # fits whatever the 95% point
    if known:
        t95 = starts[target - 1]
    else:
        t95 = elapsed + time_to_start(outlooks, target - len(starts), rate)
    window = round_budget(t95, conf) - elapsed
    keep = {o.host: o.started_within(window) for o in outlooks if o.finish() > window}
    late = [o for o in outlooks if elapsed + o.finish() > t95 + HOLDING_AFTER]
    tail = sorted(late, key=lambda o: -o.finish())
    holding = [o.host for o in tail[:HOLDING_NAMED]] if len(tail) <= 2 * HOLDING_NAMED else []
    eta = max(min(last, window), by_rate, 0.0) if outlooks else max(window, 0.0)
    return TailPlan(keep, eta, holding, window)


def time_to_start(outlooks: Sequence[HostOutlook], needed: int, rate: float) -> float:
    """Seconds from now until ``needed`` more requests have started: by the hosts'
    paces, and no faster than ``rate`` requests a second (0: no bound)."""
    by_rate = needed / rate if rate > 0 else 0.0
    finishes = sorted(o.finish() for o in outlooks)
    low, high = 0.0, finishes[-1]
    if sum(o.queued for o in outlooks) <= needed:
        return max(high, by_rate)
    for _ in range(40):  # bisection to well under a millisecond of any plausible round
        middle = (low + high) / 2
        if sum(o.started_within(middle) for o in outlooks) >= needed:
            high = middle
        else:
            low = middle
    return max(high, by_rate)
