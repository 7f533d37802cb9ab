"""generate's selection in the driver, for a small crawldb (``db.driver.urls``).

generate by Spark runs some twenty Spark jobs a round (the crawldb and robots cache
reads, the priority and variant windows, the per-host counts, the fetch list's write),
seconds of fixed cost on a crawldb of a few thousand URLs. Here the same rules select the
fetch list in plain Python over the crawldb read through delta-rs: due and scored URLs,
their priority and tier (``crawldb.priority``), one URL a dedup key, the per-host cap,
the tiers' budget, the hosts' pauses from the robots.txt cache, and the round's shares of
slow hosts. tests/test_driver_rounds.py checks that both ways list the same URLs.
Rules this way leaves to Spark (the crawl-job API's submissions, ``generate.filter``,
``generate.update.crawldb``) send the round to Spark's way.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

from crawldb.admission import ascending, descending
from crawldb.partitioning import host_pace, round_shares, urls_within
from crawldb.priority import NEVER_FETCHED, TIERS, priority, tier_quotas
from crawldb.schema import CRAWLDB, FETCHLIST
from engine.delta_files import is_delta_table
from engine.driver_tables import arrow_table, is_plain
from engine.driver_update import crawldb_in_driver
from engine.layout import DataDir
from engine.metrics import latest_responses
from engine.robots_cache import fresh_robots_rows
from lib import vocabulary as st
from lib.fetching.robots import RobotsRules
from lib.url.domains import registered_domain

DUE_COLUMNS = [
    *(name for name in FETCHLIST.names if name in CRAWLDB.names),
    *("dedup_key", "pagerank", "last_fetch_time", "fetch_interval", "reason"),
    *("change_count", "revisit_count", "retries", "fetch_time"),
]


@dataclass
class FetchPlan:
    """The URLs selected (fetch list rows, with ``pause`` and ``deferred``), per host
    (URLs, seconds per URL), and how many were due before the round's shares."""

    rows: list[dict]
    per_host: dict[str, tuple[int, float]]
    due_count: int


def in_driver(conf: dict, data: DataDir) -> bool:
    """Whether generate selects in the driver: a crawldb the driver takes
    (``engine.driver_update.crawldb_in_driver``) and no rule left to Spark's way."""
    if conf["generate.filter"] or conf["generate.update.crawldb"]:
        return False
    if is_delta_table(data.api_table("submissions")):
        return False  # the crawl-job API's submissions are injected by Spark
    if is_delta_table(data.robots) and not is_plain(data.robots):
        return False
    return crawldb_in_driver(conf, data)


def fetch_plan(spark, conf: dict, data: DataDir, now: int) -> FetchPlan:
    """``jobs.generate``'s selection, in the driver, at ``now`` (epoch ms)."""
    import pyarrow.compute as pc

    crawldb = arrow_table(data.crawldb, CRAWLDB, DUE_COLUMNS)
    timely = pc.less_equal(crawldb.column("fetch_time"), now)
    scored = pc.greater_equal(crawldb.column("score"), conf["generate.min.score"])
    due_hosts = set(crawldb.filter(timely).column("host").to_pylist())
    due = crawldb.filter(pc.and_(timely, scored)).to_pylist()
    with_priorities(due, conf, now)
    due = first_variants(due)
    pauses = host_pauses(conf, data, due_hosts)
    for row in due:
        row["pause"] = pauses.get(row["host"])
        row["deferred"] = row["reason"] == st.REASON_DEFERRED
    due = within_host_cap(due, conf)
    if conf["generate.topN"] >= 0:
        due = within_budget(due, conf["generate.topN"], conf)
    responses = latest_responses(spark, data.root)
    per_host = {}
    for host, rows in by_host(due).items():
        pause = max((row["pause"] for row in rows if row["pause"] is not None), default=0.0)
        per_host[host] = (len(rows), host_pace(pause, responses.get(host), conf))
    due_count = sum(urls for urls, _ in per_host.values())
    shares = round_shares(per_host, conf) if conf["fetcher.round.tail.defer"] else {}
    return FetchPlan(within_shares(due, shares, per_host), per_host, due_count)


def with_priorities(due: list[dict], conf: dict, now: int) -> None:
    """Set each due row's ``priority`` and ``tier`` (``jobs.generate.with_priority``'s)."""
    highest_rank = max((r["pagerank"] for r in due if r["pagerank"] is not None), default=None)
    highest_score = max((r["score"] for r in due if r["score"] is not None), default=None)
    for row in due:
        importance = 0.0
        if highest_score and row["score"] is not None:
            importance = row["score"] / highest_score
        if highest_rank and row["pagerank"] is not None:
            importance = row["pagerank"] / highest_rank
        elapsed = NEVER_FETCHED
        if row["last_fetch_time"] is not None:
            elapsed = max((now - row["last_fetch_time"]) / 1000.0, 0.0) / row["fetch_interval"]
        counts = [row[c] or 0 for c in ("change_count", "revisit_count", "depth", "retries")]
        row["priority"] = priority(importance, elapsed, *counts, conf, exp=math.exp)
        row["tier"] = tier_of(row, conf)


def tier_of(row: dict, conf: dict) -> str:
    """A due row's tier: a URL deferred by the last round's fetch is high."""
    if row["reason"] == st.REASON_DEFERRED or row["priority"] >= conf["generate.tier.high.min"]:
        return "high"
    return "medium" if row["priority"] >= conf["generate.tier.medium.min"] else "low"


def best_first(row: dict) -> tuple:
    """Generate's order: deferred first, then by priority, depth and URL."""
    return (row["reason"] != st.REASON_DEFERRED, *by_priority(row))


def by_priority(row: dict) -> tuple:
    """The order within a tier: by priority, then the shallowest, then the least URL."""
    return (descending(row["priority"]), ascending(row["depth"]), row["url"])


def first_variants(due: list[dict]) -> list[dict]:
    """One row a dedup key: the best, a page with content before a redirect."""
    variants = defaultdict(list)
    for row in due:
        variants[row["dedup_key"] or row["url"]].append(row)

    def order(row):
        status = row["status"]
        redirect = None if status is None else int(status in (st.REDIR_PERM, st.REDIR_TEMP))
        return (ascending(redirect), *best_first(row))

    return [min(rows, key=order) for rows in variants.values()]


def host_pauses(conf: dict, data: DataDir, hosts: set) -> dict[str, float]:
    """Host -> the seconds between two requests it gets: the larger of
    ``fetcher.server.delay`` and its fresh cached Crawl-delay (``engine.robots_cache``)."""
    base = float(conf["fetcher.server.delay"])
    pauses = dict.fromkeys(hosts, base)
    agent, limit = conf["http.agent.name"], conf["robots.content.limit"]
    for host, status, body in fresh_robots_rows(conf, data, pauses):
        rules = RobotsRules.from_response(status, bytes(body or b""), agent, limit)
        delay = rules.crawl_delay()
        pauses[host] = max(base, base if delay is None else delay)
    return pauses


def within_host_cap(due: list[dict], conf: dict) -> list[dict]:
    """The best rows of each host (or domain) up to its cap: ``generate.max.count``, and
    what its pause lets it fetch within ``fetcher.timelimit.mins``."""
    limit, minutes = conf["generate.max.count"], conf["fetcher.timelimit.mins"]
    if limit < 0 and minutes < 0:
        return due
    mode = conf["generate.count.mode"]
    if mode not in ("host", "domain"):
        raise ValueError(f"generate.count.mode must be host or domain, not {mode!r}")
    groups = defaultdict(list)
    for row in due:
        groups[row["host"] if mode == "host" else registered_domain(row["host"])].append(row)
    kept = []
    for rows in groups.values():
        for rank, row in enumerate(sorted(rows, key=best_first), start=1):
            caps = [limit] if limit >= 0 else []
            if minutes >= 0:
                pause = row["pause"]
                caps.append(urls_within(pause, minutes) if pause and pause > 0 else None)
            present = [cap for cap in caps if cap is not None]
            if present and rank <= min(present):
                kept.append(row)
    return kept


def within_budget(due: list[dict], budget: int, conf: dict) -> list[dict]:
    """The best rows of each tier, as many as its quota of the budget."""
    counts = Counter(row["tier"] for row in due)
    shares = conf["generate.tier.shares"]
    quotas = tier_quotas(budget, [counts.get(t, 0) for t in TIERS], shares)
    chosen = []
    for name, quota in zip(TIERS, quotas, strict=True):
        chosen += sorted((row for row in due if row["tier"] == name), key=by_priority)[:quota]
    return chosen


def by_host(rows: list[dict]) -> dict[str, list[dict]]:
    """The rows grouped by host."""
    grouped = defaultdict(list)
    for row in rows:
        grouped[row["host"]].append(row)
    return grouped


def within_shares(rows: list[dict], shares: dict[str, int], per_host: dict) -> list[dict]:
    """The rows, at most ``shares[host]`` of a host named there (its best: the deferred
    first, then the high tier, then by priority); ``per_host`` counts are updated."""
    if not shares:
        return rows
    kept = []
    for host, group in by_host(rows).items():
        if host not in shares:
            kept += group
            continue
        per_host[host] = (shares[host], per_host[host][1])
        kept += sorted(group, key=share_order)[: shares[host]]
    return kept


def share_order(row: dict) -> tuple:
    """The order a host's share is taken in: the deferred, the high tier, by priority."""
    return (not row["deferred"], row["tier"] != "high", descending(row["priority"]), row["url"])


def write_fetchlist(spark, segment, rows: list[dict], placed: dict, message: str) -> dict:
    """The fetch list ``rows`` with their host's partition (``placed``), written by the
    driver as the segment's fetch list table, one file in one commit labelled
    ``message``; returns its URLs by tier."""
    from engine import task_files
    from lib.parquet_file import write_parquet
    from lib.storage import basename

    table, stored = segment.table("fetchlist"), task_files.stored_schema(FETCHLIST)
    run = task_files.new_run(segment.storage, table)
    compression = spark.conf.get("spark.sql.parquet.compression.codec")
    listed = [{**row, "partition": placed[row["host"]]} for row in rows]
    listed.sort(key=lambda row: (row["partition"], row["host"], row["url"]))
    path = task_files.task_file(table, run, 0, 0, compression)
    batches = task_files.stored_table(listed, stored).to_batches()
    count, size = write_parquet(segment.storage, path, batches, stored, compression)
    file = {"file": basename(path), "bytes": size, "rows": count}
    task_files.commit(segment.storage, table, run, [file], stored, message)
    return dict(Counter(row["tier"] for row in rows))
