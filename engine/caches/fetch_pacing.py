"""A host's pause holds across rounds: the earliest moment a fetch round may ask a host,
from its last request in the rounds before.

Within a round the fetch task spaces a host's requests. Between rounds nothing did, and
as long as a round's start took seconds that was enough; once a small crawldb's round
starts within a second of the last one's end (generate and updatedb in the driver), a
host asked last in one round (its sitemap, say) could be asked again in the next before
its Crawl-delay was out. The driver reads each host's last request end from the recent
segments' fetch tables (through delta-rs: a few columns) and its pause as generate
plans it (the server delay, or its cached Crawl-delay); the fetch task holds the host
back until that moment (``lib.fetching.fetcher.PartitionFetcher``'s ``not_before``).
"""

from __future__ import annotations

from engine.caches.robots_cache import host_pauses
from engine.runtime.layout import DataDir, Segment
from engine.tables.delta_files import is_delta_table
from lib.clock import now_ms


def hosts_not_before(conf: dict, data: DataDir, segment: Segment, hosts) -> dict[str, int]:
    """Host -> the epoch ms before which this round must not ask it (only hosts asked
    recently enough to matter): its last request's end in an earlier round plus its pause."""
    ends = last_request_ends(conf, data, segment, set(hosts))
    if not ends:
        return {}
    pauses = host_pauses(conf, data, set(ends))
    return {host: end + int(pauses[host] * 1000) for host, end in ends.items()}


def last_request_ends(conf: dict, data: DataDir, segment: Segment, hosts: set) -> dict[str, int]:
    """Host -> the end (epoch ms) of its last request in the segments before
    ``segment``, looking back only as far as the longest pause a host can have."""
    window_ms = 1000 * max(conf["fetcher.server.delay"], conf["fetcher.max.crawl.delay"])
    oldest = now_ms() - window_ms
    ends: dict[str, int] = {}
    earlier = [name for name in data.segment_names() if name < segment.name]
    for name in reversed(earlier):
        table = data.segment(name).table("fetch")
        if not is_delta_table(table):
            continue
        latest = _segment_ends(table, hosts, ends)
        if latest is not None and latest < oldest:
            break  # older rounds ended before any pause could still run
    return {host: end for host, end in ends.items() if end >= oldest}


def _segment_ends(table: str, hosts: set, ends: dict[str, int]) -> int | None:
    """Fold the fetch table's request ends of ``hosts`` into ``ends``; its latest end."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    rows = DeltaTable(table).to_pyarrow_table(columns=["host", "fetched_at", "duration_ms"])
    started = rows.column("fetched_at").cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64())
    took = pc.fill_null(rows.column("duration_ms").cast(pa.int64()), 0)
    finished = pc.add(started, took).to_pylist()
    latest = None
    for host, end in zip(rows.column("host").to_pylist(), finished, strict=True):
        if end is None:
            continue
        latest = end if latest is None else max(latest, end)
        if host in hosts and end > ends.get(host, 0):
            ends[host] = end
    return latest
