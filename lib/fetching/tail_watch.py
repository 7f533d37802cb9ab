"""A fetch task's look at its round's tail: when its requests started, which hosts would
hold the round, the ETA it projects (``lib.fetching.roundtail``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lib.fetching.hoststate import HostState
from lib.fetching.roundtail import HostOutlook, TailPlan, plan_tail

# How often the round's tail is looked at (lib.fetching.roundtail). Unit: seconds.
TAIL_LOOK = 1.0


class TailWatch:
    """Request starts and the requests on their way, and the plan made from them."""

    def __init__(self, conf: Mapping[str, Any], hosts: Mapping[str, HostState]):
        self.conf = conf
        self.hosts = hosts
        self.starts: list[float] = []  # each request's start, seconds from the first
        self.asked: dict[str, float] = {}  # host -> when its request on its way started
        self.first_start: float | None = None
        self.next_look = 0.0
        self.eta_at: float | None = None  # epoch seconds of the last request, projected
        self.holding: list[str] = []  # hosts holding the round, at the last look

    def started(self, host: str, now: float) -> None:
        """A request to ``host`` started at ``now`` (monotonic seconds)."""
        if self.first_start is None:
            self.first_start = now
            self.next_look = now + TAIL_LOOK
        self.starts.append(now - self.first_start)
        self.asked[host] = now

    def answered(self, host: str) -> None:
        """The request to ``host`` ended."""
        self.asked.pop(host, None)

    def due(self, now: float) -> bool:
        """Whether it is time for a look at the tail."""
        return self.first_start is not None and now >= self.next_look

    def wait(self, timeout: float, now: float) -> float:
        """``timeout`` shortened to wake for the next look."""
        if self.first_start is None:
            return timeout
        return min(timeout, max(self.next_look - now, 0.0))

    def look(self, queues, now: float, wall: float) -> tuple[TailPlan, list[HostOutlook]]:
        """The plan for the hosts' ``queues`` (``PoliteScheduler.waiting()``), and their
        outlooks; sets the ETA (``wall``: the epoch time now) and the hosts holding."""
        self.next_look = now + TAIL_LOOK
        outlooks = [self._outlook(queue, now) for queue in queues]
        plan = plan_tail(outlooks, self.starts, now - self.first_start, self.conf)
        self.eta_at = wall + max(plan.eta, self._in_flight_eta(now, plan.left))
        self.holding = plan.holding
        return plan, outlooks

    def _outlook(self, queue, now: float) -> HostOutlook:
        """A host's queue ahead: a request on its way is expected to take as long again
        as it has run so far, then the host's pace."""
        state = self.hosts[queue.host]
        pace = state.delay() + (state.response_time or 0.0)
        running = now - self.asked.get(queue.host, now)
        start = running + pace if queue.busy else max(queue.next_start - now, 0.0)
        return HostOutlook(queue.host, len(queue.items), start, pace)

    def _in_flight_eta(self, now: float, left: float) -> float:
        """Seconds until the longest request on its way ends, by the same guess (bounded by
        ``http.time.limit`` and, when the round's end cuts requests, by its budget)."""
        running = max((now - since for since in self.asked.values()), default=0.0)
        limit = self.conf["http.time.limit"]
        guess = min(running, limit - running) if limit >= 0 else running
        if self.conf["fetcher.round.tail.defer"]:
            guess = min(guess, max(left, 0.0))
        return max(guess, 0.0)
