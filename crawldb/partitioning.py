"""Spread a fetch list's hosts over fetch partitions by expected fetch time.

One partition per host keeps politeness simple (no two tasks talk to one host), but a
host is then bound to one task for the round. Hashing hosts onto partitions balances the
URL counts at best; what a task spends is mostly waiting, so a host's cost is its URL
count times its pause (the larger of ``fetcher.server.delay`` and its robots.txt
Crawl-delay). Hosts are placed by longest processing time first: the costliest host goes
to the least loaded partition, which keeps the slowest partition within 4/3 of the best
possible. ``skew`` (slowest partition over the median) is reported for every round.
"""

from __future__ import annotations

import heapq
import math
import statistics
from collections.abc import Mapping, Sequence

from lib.fetching.hoststate import HostState
from lib.fetching.roundtail import BULK_SHARE, HostOutlook, round_budget, time_to_start

MIN_URL_COST = 0.01  # seconds: a URL costs its transfer even with no delay at all


def host_cost(urls: int, pause_s: float) -> float:
    """Expected seconds a task spends on a host's URLs in one round."""
    return urls * max(pause_s, MIN_URL_COST)


def assign_partitions(costs: Mapping[str, float], partitions: int) -> dict[str, int]:
    """Host -> partition, costliest hosts first onto the least loaded partition.

    Deterministic: ties are broken by host name and partition number."""
    if partitions < 1:
        raise ValueError(f"need at least one partition, not {partitions}")
    loads = [(0.0, index) for index in range(partitions)]
    placed = {}
    for host in sorted(costs, key=lambda h: (-costs[h], h)):
        load, index = heapq.heappop(loads)
        placed[host] = index
        heapq.heappush(loads, (load + costs[host], index))
    return placed


def partition_loads(
    costs: Mapping[str, float], placed: Mapping[str, int], partitions: int
) -> list[float]:
    """Total cost per partition."""
    loads = [0.0] * partitions
    for host, index in placed.items():
        loads[index] += costs[host]
    return loads


def skew(loads: Sequence[float]) -> float:
    """Slowest partition over the median partition (1.0 is perfectly even); partitions
    with no work are left out, and a round of one busy partition has skew 1."""
    busy = [load for load in loads if load > 0]
    if not busy:
        return 1.0
    return round(max(busy) / statistics.median(busy), 3)


def round_cap(pause_s: float, time_limit_mins: float) -> int | None:
    """Most URLs a host can be fetched in a round of ``time_limit_mins`` (-1: no limit):
    more would only be skipped when the round's time runs out."""
    if time_limit_mins < 0 or pause_s <= 0:
        return None
    return urls_within(pause_s, time_limit_mins)


def urls_within(pause_s, time_limit_mins: float, floor=math.floor, greatest=max):
    """``round_cap`` for a positive pause and a limit; written over operators that floats
    and Spark Columns share (generate passes ``F.floor`` and a Column ``greatest``)."""
    return greatest(1, floor(time_limit_mins * 60.0 / pause_s))


def host_pace(pause_s: float, response_s: float | None, conf: Mapping) -> float:
    """Seconds a host takes per URL: the pause the fetcher's own rule gives it
    (``lib.fetching.hoststate``: at least ``pause_s``, longer for a host whose usual answer is
    slow) plus the answer itself."""
    state = HostState(conf)
    state.base_delay, state.response_time = pause_s, response_s  # server and Crawl-delay
    return state.delay() + (response_s or 0.0)


def round_shares(hosts: Mapping[str, tuple[int, float]], conf: Mapping) -> dict[str, int]:
    """For a round of ``hosts`` (host -> (URLs, pace in seconds)), the most URLs of each
    host that fit the round's budget (``lib.fetching.roundtail``: 1.5 x the time by which 95% of
    the round's URLs start, + 6 s by default), for the hosts whose queue would not fit:
    they finish with the rest and spread the remainder over the next rounds."""
    outlooks = [HostOutlook(host, urls, 0.0, pace) for host, (urls, pace) in hosts.items() if urls]
    if not outlooks:
        return {}
    target = math.ceil(BULK_SHARE * sum(o.queued for o in outlooks))
    window = round_budget(time_to_start(outlooks, target, 0.0), conf)
    return {o.host: o.started_within(window) for o in outlooks if o.finish() > window}
