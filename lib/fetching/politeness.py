"""Per-host queues that make politeness hold by construction (Nutch's FetchItemQueues).

A host is handed out once at a time (one request, so one connection, per host), and not
before the time the previous request set for it (its end plus the host's pause, see
``lib.fetching.hoststate``). Among the hosts that may go, the one waiting longest goes first.
Time comes from an injected clock so the rules can be tested without sleeping. The
fetcher's one thread drives it (``lib.fetching.fetcher``): nothing here blocks or locks.
"""

from __future__ import annotations

import heapq
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


class PoliteScheduler:
    """Hands out ``(host, item)`` pairs, one per host at a time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._queues: dict[str, HostQueue] = {}
        self._ready: list[tuple[float, int, str]] = []  # idle hosts with items
        self._busy = 0
        self._seq = 0

    def add(self, host: str, item: Any) -> None:
        """Queue an item of a host (before or during fetching)."""
        queue = self._queues.get(host)
        if queue is None:
            queue = self._queues[host] = HostQueue(host)
        queue.items.append(item)
        if len(queue.items) == 1 and not queue.busy:
            self._push(queue)

    def add_first(self, host: str, item: Any) -> None:
        """Queue an item to be the host's next one; only while the caller holds the host."""
        queue = self._queues[host]
        if not queue.busy:
            raise RuntimeError(f"add_first({host!r}) while the host is not held")
        queue.items.appendleft(item)

    def not_before(self, host: str, moment: float) -> None:
        """Hold a queued, idle host back until ``moment`` (e.g. a retried task's first pause)."""
        queue = self._queues[host]
        queue.next_start = max(queue.next_start, moment)
        self._ready = [(queue.next_start if h == host else t, n, h) for t, n, h in self._ready]
        heapq.heapify(self._ready)

    def take_all(self) -> list[tuple[str, Any]]:
        """Remove and return every queued ``(host, item)`` (the round is over)."""
        items = [(q.host, item) for q in self._queues.values() for item in q.items]
        for queue in self._queues.values():
            queue.items.clear()
        self._ready.clear()
        return items

    def take_remaining(self, host: str) -> list[Any]:
        """Remove and return the host's queued items (the host is being skipped)."""
        queue = self._queues[host]
        items = list(queue.items)
        queue.items.clear()
        return items

    def take_last(self, host: str, count: int) -> list[Any]:
        """Remove and return the last ``count`` queued items of the host, in queue order."""
        queue = self._queues[host]
        taken = [queue.items.pop() for _ in range(min(count, len(queue.items)))]
        return taken[::-1]

    def waiting(self) -> list[HostQueue]:
        """The queues that still have items (held hosts among them)."""
        return [queue for queue in self._queues.values() if queue.items]

    def next_ready(self) -> tuple[str, Any] | Wait | object:
        """A pair to fetch now (its host is held until ``release``), a ``Wait``, or
        ``DONE`` when every queue is empty and no host is held."""
        return self._next_ready(self.clock())

    def release(self, host: str, next_start: float | None) -> None:
        """Give the host back; it may go again at ``next_start`` (``None``: no request was
        made, so the previous time stands)."""
        queue = self._queues[host]
        queue.busy = False
        self._busy -= 1
        if next_start is not None:
            queue.next_start = max(queue.next_start, next_start)
        if queue.items:
            self._push(queue)

    def _next_ready(self, now: float):
        while self._ready:
            start, _, host = self._ready[0]
            queue = self._queues[host]
            if not queue.items:  # emptied while waiting (take_remaining, take_last)
                heapq.heappop(self._ready)
                continue
            if start > now:
                return Wait(start - now)
            heapq.heappop(self._ready)
            queue.busy = True
            self._busy += 1
            return host, queue.items.popleft()
        return DONE if self._busy == 0 else Wait(None)

    def _push(self, queue: HostQueue) -> None:
        self._seq += 1
        heapq.heappush(self._ready, (queue.next_start, self._seq, queue.host))
