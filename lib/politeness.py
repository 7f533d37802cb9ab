"""Per-host queues that make politeness hold by construction (Nutch's FetchItemQueues).

A host is handed to at most one fetcher thread at a time (one connection per host), and
not before the time the previous request set for it (its end plus the host's pause, see
``lib.hoststate``). Among the hosts that may go, the one waiting longest goes first.
Time comes from an injected clock so the rules can be tested without sleeping.

Threads are woken one at a time: a host becoming ready wakes one waiting thread, and a
thread that takes a host wakes the next to watch the following one. Waking all of them
on every change cost each request a wake-up of every idle thread (16 by default), each
taking the lock to find nothing to do.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class HostQueue:
    """The URLs of one host still to fetch, and when the host may be asked next."""

    host: str
    items: deque = field(default_factory=deque)
    next_start: float = 0.0
    busy: bool = False


@dataclass(frozen=True)
class Wait:
    """No host may go now; ``seconds`` until one may (``None``: until a host is released)."""

    seconds: float | None


DONE = object()
# Longest sleep of a thread with nothing to watch (every queued host is held): a bound,
# not a poll the rules rely on; releases and new items wake threads at once. Unit: s.
IDLE_WAIT = 1.0


class PoliteScheduler:
    """Hands out ``(host, item)`` pairs to fetcher threads, one per host at a time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._queues: dict[str, HostQueue] = {}
        self._ready: list[tuple[float, int, str]] = []  # idle hosts with items
        self._busy = 0
        self._seq = 0
        self._cond = threading.Condition()

    def add(self, host: str, item: Any) -> None:
        """Queue an item of a host (before or during fetching)."""
        with self._cond:
            queue = self._queues.get(host)
            if queue is None:
                queue = self._queues[host] = HostQueue(host)
            queue.items.append(item)
            if len(queue.items) == 1 and not queue.busy:
                self._push(queue)

    def add_first(self, host: str, item: Any) -> None:
        """Queue an item to be the host's next one; only while the caller holds the host."""
        with self._cond:
            queue = self._queues[host]
            if not queue.busy:
                raise RuntimeError(f"add_first({host!r}) while the host is not held")
            queue.items.appendleft(item)

    def knows(self, host: str) -> bool:
        """True once the host has a queue."""
        with self._cond:
            return host in self._queues

    @property
    def host_count(self) -> int:
        """Hosts that have a queue."""
        with self._cond:
            return len(self._queues)

    def not_before(self, host: str, moment: float) -> None:
        """Hold a queued, idle host back until ``moment`` (e.g. a retried task's first pause)."""
        with self._cond:
            queue = self._queues[host]
            queue.next_start = max(queue.next_start, moment)
            self._ready = [(queue.next_start if h == host else t, n, h) for t, n, h in self._ready]
            heapq.heapify(self._ready)
            self._cond.notify()

    def take_all(self) -> list[tuple[str, Any]]:
        """Remove and return every queued ``(host, item)`` (the round is over)."""
        with self._cond:
            items = [(q.host, item) for q in self._queues.values() for item in q.items]
            for queue in self._queues.values():
                queue.items.clear()
            self._ready.clear()
            self._cond.notify_all()
            return items

    def take_remaining(self, host: str) -> list[Any]:
        """Remove and return the host's queued items (the host is being skipped)."""
        with self._cond:
            queue = self._queues[host]
            items = list(queue.items)
            queue.items.clear()
            return items

    def next_ready(self) -> tuple[str, Any] | Wait | object:
        """Non-blocking step: a pair to fetch now, a ``Wait``, or ``DONE``."""
        with self._cond:
            return self._next_ready(self.clock())

    def acquire(self, deadline: float | None = None) -> tuple[str, Any] | None:
        """Block until some host may go; ``None`` when every queue is empty and idle, or
        when no host may go before ``deadline`` (then the remaining items stay queued)."""
        with self._cond:
            while True:
                now = self.clock()
                if deadline is not None and now >= deadline:
                    return None
                step = self._next_ready(now)
                if step is DONE:
                    return None
                if not isinstance(step, Wait):
                    return step
                wait = step.seconds
                if deadline is not None:
                    wait = deadline - now if wait is None else min(wait, deadline - now)
                self._cond.wait(wait if wait is not None else IDLE_WAIT)

    def release(self, host: str, next_start: float | None) -> None:
        """Give the host back; it may go again at ``next_start`` (``None``: no request was
        made, so the previous time stands)."""
        with self._cond:
            queue = self._queues[host]
            queue.busy = False
            self._busy -= 1
            if next_start is not None:
                queue.next_start = max(queue.next_start, next_start)
            if queue.items:
                self._push(queue)
            elif not self._ready and self._busy == 0:
                self._cond.notify_all()  # all done: every waiting thread may leave

    def _next_ready(self, now: float):
        if not self._ready:
            return DONE if self._busy == 0 else Wait(None)
        start, _, host = self._ready[0]
        if start > now:
            return Wait(start - now)
        heapq.heappop(self._ready)
        queue = self._queues[host]
        if not queue.items:  # emptied by take_remaining while waiting
            return self._next_ready(now)
        queue.busy = True
        self._busy += 1
        if self._ready:
            self._cond.notify()  # pass the watch over the next host on
        return host, queue.items.popleft()

    def _push(self, queue: HostQueue) -> None:
        self._seq += 1
        heapq.heappush(self._ready, (queue.next_start, self._seq, queue.host))
        self._cond.notify()
