"""generate's selection, written once over Arrow tables: which due URLs a fetch list takes.

The same functions run in the driver on the whole crawldb (a small one, read through
delta-rs) and in Spark's Python tasks on partitions of a large one (``mapInArrow``): the
executor is ``engine.executors.generate_plan``. A partition must hold every row of a
``group_key`` (the host without ``www.``, or its registered domain under a per-domain
cap), so that one URL a dedup key, the per-host and per-domain caps and the round's
shares are decided within it; what crosses partitions
(the highest score and PageRank, the budget's last admitted key per tier, the hosts'
figures) is computed once from the partitions' parts and passed in.

The steps, in order:

1. ``due_rows``: ``fetch_time`` at or before now, score at least ``generate.min.score``
   (and, with ``generate.update.crawldb``, not generated within ``crawl.gen.delay``);
2. ``candidates``: each row's priority and tier (``crawldb.priority``; a URL deferred by
   the last round's fetch is high), one row a dedup key (the one that answered with
   content before a redirect, then best first), and the best rows of each host (or
   domain) up to its cap: ``generate.max.count``, and what its pause lets it fetch
   within ``fetcher.timelimit.mins``;
3. with a budget (``generate.topN``): each tier's quota (``crawldb.priority.tier_quotas``)
   of its best rows, by ``best_keys`` of each partition, ``budget_limits`` over them all
   and ``within_limits``;
4. ``within_shares``: at most ``shares[host]`` rows of a slow host (its best: the
   deferred first, then the high tier, then by priority), from ``host_figures``.

Best first means: deferred first, then by priority (highest first), then the shallowest
(a missing depth first), then the least URL, so that every executor lists the same rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from crawldb.partitioning import urls_within
from crawldb.priority import NEVER_FETCHED, priority
from lib import vocabulary as st
from lib.fetching.robots import RobotsRules
from lib.url.domains import registered_domain

# The crawldb columns the selection reads; GENERATED is read with generate.update.crawldb.
DUE_COLUMNS = (
    *("url", "host", "status", "score", "depth", "etag", "last_modified"),
    *("payload_digest", "capture_time", "capture_segment", "capture_record_id"),
    *("dedup_key", "pagerank", "last_fetch_time"),
    *("fetch_interval", "reason", "change_count", "revisit_count", "retries", "fetch_time"),
)
GENERATED = "generate_time"
# What due_rows tests and highest reads (with url for generate.filter, GENERATED too).
HIGHEST_COLUMNS = ("fetch_time", "score", "pagerank")
# The columns of a candidate row: the fetch list's (but its partition), pause, deferred.
CANDIDATE_COLUMNS = (
    *("url", "host", "status", "score", "depth", "etag", "last_modified", "payload_digest"),
    *("capture_time", "capture_segment", "capture_record_id", "priority", "tier", "pause"),
    "deferred",
)
KEY_COLUMNS = ("tier", "priority", "depth", "url")  # a row's place in its tier
MS_PER = {"s": 1e-3, "ms": 1.0, "us": 1e3, "ns": 1e6}  # a timestamp unit's values per ms
LOWEST_DEPTH = -(2**31)  # a missing depth sorts first


def variant_host(host: str) -> str:
    """The key that keeps a row's host and its dedup variants in one partition: the
    host without ``www.`` (a URL's dedup key differs from it at most by that and by its
    path, ``lib.url.normalize.UrlNormalizer.dedup``). A site of many hosts is so spread
    over the partitions, not held by one task."""
    return host.removeprefix("www.")


def group_key(host: str, conf: Mapping[str, Any]) -> str:
    """The key that keeps in one partition what ``candidates`` decides together: the
    registered domain when a cap counts by domain (``counts_by_domain``), else the
    ``variant_host``."""
    return registered_domain(host) if counts_by_domain(conf) else variant_host(host)


def counts_by_domain(conf: Mapping[str, Any]) -> bool:
    """Whether a cap of ``within_host_cap`` counts a registered domain's rows together."""
    capped = conf["generate.max.count"] >= 0 or conf["fetcher.timelimit.mins"] >= 0
    return capped and conf["generate.count.mode"] == "domain"


def due_rows(table: pa.Table, conf: Mapping[str, Any], now: int) -> pa.Table:
    """The rows due at ``now`` (epoch ms) and scored at least ``generate.min.score``."""
    fetch_time = millis(table.column("fetch_time"))
    with np.errstate(invalid="ignore"):
        keep = (fetch_time <= now) & (floats(table.column("score")) >= conf["generate.min.score"])
        if conf["generate.update.crawldb"] and GENERATED in table.column_names:
            generated = millis(table.column(GENERATED))
            keep &= np.isnan(generated) | (generated + conf["crawl.gen.delay"] <= now)
    return table.filter(pa.array(keep))


def highest(table: pa.Table) -> tuple[float | None, float | None]:
    """The highest PageRank and score of the rows (None where none has one)."""
    return (pc.max(table.column("pagerank")).as_py(), pc.max(table.column("score")).as_py())


def combined(parts: Iterable[tuple]) -> tuple[float | None, float | None]:
    """The highest of ``highest``'s answers for parts of the rows."""
    parts = list(parts)
    return tuple(max((p[i] for p in parts if p[i] is not None), default=None) for i in (0, 1))


def host_pause(status: int | None, body: bytes | None, conf: Mapping[str, Any]) -> float:
    """The seconds between two requests to a host whose cached robots.txt answered
    ``status`` and ``body``: the larger of ``fetcher.server.delay`` and its Crawl-delay."""
    base = float(conf["fetcher.server.delay"])
    rules = RobotsRules.from_response(
        status, bytes(body or b""), conf["http.agent.name"], conf["robots.content.limit"]
    )
    delay = rules.crawl_delay()
    return base if delay is None else max(base, delay)


def candidates(
    table: pa.Table, conf: Mapping[str, Any], now: int, top: tuple, pauses: Mapping[str, float]
) -> pa.Table:
    """Steps 2 of the module's docstring on due rows: priorities and tiers (``top``:
    ``combined`` over every due row), one row a dedup key, the per-host cap. ``pauses``:
    host -> pause, for the hosts whose pause is not ``fetcher.server.delay``."""
    values = priorities(table, conf, now, top)
    deferred = is_true(pc.equal(table.column("reason"), st.REASON_DEFERRED))
    high, medium = conf["generate.tier.high.min"], conf["generate.tier.medium.min"]
    tiers = np.where(
        deferred | (values >= high), "high", np.where(values >= medium, "medium", "low")
    )
    base = float(conf["fetcher.server.delay"])
    pause = by_host(table.column("host"), lambda host: pauses.get(host, base), np.float64)
    table = table.append_column("priority", pa.array(values, pa.float64()))
    table = table.append_column("tier", pa.array(tiers.astype(object), pa.string()))
    table = table.append_column("pause", pa.array(pause, pa.float64()))
    table = table.append_column("deferred", pa.array(deferred, pa.bool_()))
    table = first_variants(table)
    return within_host_cap(table, conf).select(list(CANDIDATE_COLUMNS))


def priorities(table: pa.Table, conf: Mapping[str, Any], now: int, top: tuple) -> np.ndarray:
    """Each row's ``crawldb.priority``: importance from its PageRank over the highest
    (else its score over the highest score, else 0), staleness since its last fetch."""
    top_rank, top_score = top
    importance = np.zeros(table.num_rows)
    if top_score:
        score = floats(table.column("score"))
        importance = np.where(np.isnan(score), importance, score / top_score)
    if top_rank:
        rank = floats(table.column("pagerank"))
        importance = np.where(np.isnan(rank), importance, rank / top_rank)
    last = millis(table.column("last_fetch_time"))
    interval = floats(table.column("fetch_interval"))
    with np.errstate(invalid="ignore", divide="ignore"):
        elapsed = np.maximum((now - last) / 1000.0, 0.0) / interval
    elapsed = np.where(np.isnan(last), NEVER_FETCHED, elapsed)
    counts = [
        floats(table.column(name), fill=0.0)
        for name in ("change_count", "revisit_count", "depth", "retries")
    ]
    return np.asarray(priority(importance, elapsed, *counts, conf, exp=np.exp), np.float64)


def first_variants(table: pa.Table) -> pa.Table:
    """One row a dedup key: the one that answered with content before a redirect (a row
    of no status first), then the best first."""
    variant = single_array(pc.coalesce(table.column("dedup_key"), table.column("url")))
    ids = pc.dictionary_encode(variant, null_encoding="encode").indices
    ids = ids.to_numpy(zero_copy_only=False)
    # Most keys have one row: only the rows that share theirs are ranked.
    shared = np.flatnonzero(np.bincount(ids)[ids] > 1)
    if not len(shared):
        return table
    rows = table.take(pa.array(shared))
    status = rows.column("status")
    redirect = pc.if_else(pc.is_in(status, pa.array([st.REDIR_PERM, st.REDIR_TEMP])), 1, 0)
    redirect = pc.if_else(pc.is_null(status), -1, redirect).cast(pa.int8())
    order = [("redirect", redirect, "ascending"), *best_first(rows)]
    index, rank = ranked(rows, variant.take(pa.array(shared)), order)
    keep = np.ones(table.num_rows, dtype=bool)
    keep[shared] = False
    keep[shared[index[rank == 1]]] = True
    return table.filter(pa.array(keep))


def within_host_cap(table: pa.Table, conf: Mapping[str, Any]) -> pa.Table:
    """The best rows of each host (or domain) up to its cap: ``generate.max.count``, and
    what its pause lets it fetch within ``fetcher.timelimit.mins`` (a host without a
    pause has no such cap)."""
    limit, minutes = conf["generate.max.count"], conf["fetcher.timelimit.mins"]
    if limit < 0 and minutes < 0:
        return table
    mode = conf["generate.count.mode"]
    if mode not in ("host", "domain"):
        raise ValueError(f"generate.count.mode must be host or domain, not {mode!r}")
    hosts = table.column("host")
    counted = hosts if mode == "host" else pa.array(by_host(hosts, registered_domain, object))
    index, rank = ranked(table, counted, best_first(table))
    cap = np.full(table.num_rows, np.inf)
    if limit >= 0:
        cap = np.minimum(cap, limit)
    if minutes >= 0:
        pause = floats(table.column("pause"))[index]
        with np.errstate(divide="ignore"):
            by_time = urls_within(pause, minutes, floor=np.floor, greatest=np.maximum)
        cap = np.minimum(cap, np.where(pause > 0, by_time, np.inf))
    return table.take(pa.array(np.sort(index[rank <= cap])))


def within_budget_reach(table: pa.Table, budget: int) -> pa.Table:
    """The rows among the first ``budget`` of their tier (in the tier's order): no other
    row can be within the budget, whatever the other parts of the rows hold, and the
    tiers' quotas are the same from counts cut at the budget (``tier_quotas`` takes at
    most the budget from a tier). A part's candidates are cut so before the budget's
    passes; with no budget (``budget`` < 0) every row is kept."""
    if budget < 0 or table.num_rows <= budget:
        return table
    index, rank = ranked(table, table.column("tier"), by_priority(table))
    return table.take(pa.array(np.sort(index[rank <= budget])))


def tier_counts(table: pa.Table) -> dict[str, int]:
    """The rows of each tier."""
    counts = pc.value_counts(table.column("tier")).to_pylist()
    return {entry["values"]: entry["counts"] for entry in counts}


def best_keys(table: pa.Table, quotas: Mapping[str, int]) -> pa.Table:
    """The place (``KEY_COLUMNS``) of each tier's best rows, as many as its quota."""
    index, rank = ranked(table, table.column("tier"), by_priority(table))
    tiers = np.asarray(table.column("tier").to_pylist(), dtype=object)[index]
    quota = np.array([quotas.get(name, 0) for name in tiers], dtype=np.int64)
    return table.select(list(KEY_COLUMNS)).take(pa.array(index[rank <= quota]))


def budget_limits(keys: pa.Table, quotas: Mapping[str, int]) -> dict[str, tuple]:
    """Tier -> the place of the last row its quota admits, from ``best_keys`` of every
    part of the rows (the best of the parts' best are the best of all)."""
    best = best_keys(keys, quotas).to_pylist()
    limits = {}
    for row in best:  # in order within each tier: the last is the limit
        limits[row["tier"]] = (row["priority"], row["depth"], row["url"])
    return limits


def within_limits(table: pa.Table, limits: Mapping[str, tuple]) -> pa.Table:
    """The rows at or before their tier's limit (``budget_limits``); none of a tier
    without one."""
    keep = np.zeros(table.num_rows, dtype=bool)
    tiers = np.asarray(table.column("tier").to_pylist(), dtype=object)
    value, depth = floats(table.column("priority")), depths(table)
    urls = np.asarray(table.column("url").to_pylist(), dtype=object)
    for name, (last_value, last_depth, last_url) in limits.items():
        last_depth = LOWEST_DEPTH if last_depth is None else last_depth
        before = (value > last_value) | (
            (value == last_value)
            & ((depth < last_depth) | ((depth == last_depth) & (urls <= last_url)))
        )
        keep |= (tiers == name) & before
    return table.filter(pa.array(keep))


def host_figures(table: pa.Table) -> dict[str, tuple[int, float]]:
    """Host -> (rows, its largest pause)."""
    grouped = table.group_by("host").aggregate([("url", "count"), ("pause", "max")])
    return {row["host"]: (row["url_count"], row["pause_max"] or 0.0) for row in grouped.to_pylist()}


def within_shares(table: pa.Table, shares: Mapping[str, int]) -> pa.Table:
    """The rows, at most ``shares[host]`` of a host named there: its best, the deferred
    first, then the high tier, then by priority."""
    if not shares:
        return table
    order = [
        ("deferred", table.column("deferred").cast(pa.int8()), "descending"),
        ("high", pc.equal(table.column("tier"), "high").cast(pa.int8()), "descending"),
        ("priority", table.column("priority"), "descending"),
        ("url", table.column("url"), "ascending"),
    ]
    index, rank = ranked(table, table.column("host"), order)
    share = by_host(table.column("host"), lambda host: shares.get(host, -1), np.int64)[index]
    keep = (share < 0) | (rank <= share)
    return table.take(pa.array(np.sort(index[keep])))


def best_first(table: pa.Table) -> list[tuple]:
    """The order keys of best first (deferred, priority, depth, URL)."""
    deferred = ("deferred", table.column("deferred").cast(pa.int8()), "descending")
    return [deferred, *by_priority(table)]


def by_priority(table: pa.Table) -> list[tuple]:
    """The order keys within a tier: by priority, then the shallowest, then the URL."""
    return [
        ("priority", table.column("priority"), "descending"),
        ("depth", pa.array(depths(table)), "ascending"),
        ("url", table.column("url"), "ascending"),
    ]


def ranked(table: pa.Table, groups, order: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """The rows' indices sorted by group, then by ``order`` ((name, column, direction),
    no nulls), and each one's rank in its group (1 for the first)."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    encoded = pc.dictionary_encode(single_array(groups), null_encoding="encode")
    ids = encoded.indices  # nulls: one group
    # One chunk a key: Arrow's sort of a table of many chunks resolves every
    # comparison's chunk, several times slower than the same sort of whole columns.
    keys = pa.table({"group": ids, **{name: single_array(column) for name, column, _ in order}})
    index = pc.sort_indices(
        keys, sort_keys=[("group", "ascending"), *((n, d) for n, _, d in order)]
    ).to_numpy()
    sorted_ids = ids.to_numpy(zero_copy_only=False)[index]
    positions = np.arange(len(index))
    starts = np.concatenate([[True], sorted_ids[1:] != sorted_ids[:-1]])
    first = np.maximum.accumulate(np.where(starts, positions, 0))
    return index, positions - first + 1


def by_host(hosts, value_of, dtype) -> np.ndarray:
    """``value_of(host)`` for each row, computed once per distinct host."""
    encoded = pc.dictionary_encode(single_array(hosts), null_encoding="encode")
    values = np.array([value_of(host) for host in encoded.dictionary.to_pylist()], dtype=dtype)
    if not len(values):
        return np.zeros(len(encoded), dtype=dtype)
    return values[encoded.indices.to_numpy(zero_copy_only=False)]


def single_array(column) -> pa.Array:
    """A column (an Arrow array or chunked array) as one array. Not by
    ``pa.chunked_array([column])``: given a chunked array, that converts it value by
    value, a second a million rows."""
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def depths(table: pa.Table) -> np.ndarray:
    """The rows' depths, a missing one as ``LOWEST_DEPTH``."""
    column = pc.fill_null(table.column("depth"), LOWEST_DEPTH)
    return column.to_numpy().astype(np.int64)


def floats(column, fill: float = np.nan) -> np.ndarray:
    """A numeric column as floats, nulls as ``fill``."""
    return pc.fill_null(column.cast(pa.float64()), fill).to_numpy()


def is_true(column) -> np.ndarray:
    """A boolean column as a numpy mask, null as False."""
    return pc.fill_null(column, False).to_numpy(zero_copy_only=False).astype(bool)


def millis(column) -> np.ndarray:
    """A time column (a timestamp, or epoch ms as integers) as epoch ms floats, NaN for
    null; a timestamp finer than ms is floored to its ms."""
    if pa.types.is_timestamp(column.type):
        per_ms = MS_PER[column.type.unit]
        return np.floor(floats(column.cast(pa.int64())) / per_ms)
    return floats(column)
