"""generate's selection run where the crawldb is: the rule of ``crawldb.selection``, in
the driver on the whole crawldb (up to ``db.driver.urls`` URLs, read through delta-rs, no
Spark job) or in Spark's Python tasks on partitions of a larger one.

Both executors call the same functions in the same order; they differ only in how the
rows reach them. By Spark: one task reads the due rows' highest score and PageRank, then
the rows that can be due are shuffled by ``crawldb.selection.group_key`` (made in Python
for the distinct hosts alone: the host without ``www.``, or its domain under a per-domain
cap) and each partition's due rows and their candidates are
selected whole (``mapInArrow``, a partition a table), cached, and read
again for what crosses partitions: the tiers' counts and each partition's best keys when
there is a budget, then the hosts' figures for the round's shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from crawldb import selection
from crawldb.partitioning import host_pace, round_shares
from crawldb.priority import TIERS, tier_quotas
from crawldb.schema import CRAWLDB, FETCHLIST
from engine.caches.robots_cache import fresh_robots, host_pauses
from engine.executors.driver_update import crawldb_in_driver
from engine.runtime.layout import DataDir
from engine.tables.delta_files import is_delta_table
from engine.tables.driver_tables import arrow_table, is_plain
from engine.tables.metrics import latest_responses
from engine.tables.store import read_crawldb
from lib import vocabulary as st
from lib.url.filter import UrlFilter

CANDIDATE_DDL = (
    "url STRING, host STRING, status STRING, score DOUBLE, depth INT, etag STRING, "
    "last_modified STRING, payload_digest STRING, capture_time TIMESTAMP, "
    "capture_segment STRING, capture_record_id STRING, priority DOUBLE, "
    "tier STRING, pause DOUBLE, deferred BOOLEAN"
)
KEY_DDL = "tier STRING, priority DOUBLE, depth INT, url STRING"
FIGURES_DDL = "host STRING, urls BIGINT, pause DOUBLE"
HIGHEST_DDL = "pagerank DOUBLE, score DOUBLE"
# What the hosts' figures of the rows within the budget read.
FIGURE_COLUMNS = ("host", "url", "pause", "tier", "priority", "depth")


@dataclass
class FetchPlan:
    """The URLs selected (candidate rows: an Arrow table in the driver, a DataFrame by
    Spark), per host (URLs, seconds per URL), and how many were due before the shares."""

    rows: Any
    per_host: dict[str, tuple[int, float]]
    due_count: int


def in_driver(conf: dict, data: DataDir) -> bool:
    """Whether the driver selects: a crawldb the driver takes
    (``engine.executors.driver_update.crawldb_in_driver``), and no step that needs Spark (the
    crawl-job API's submissions to inject, ``generate.update.crawldb``'s stamps)."""
    if conf["generate.update.crawldb"]:
        return False
    if is_delta_table(data.api_table("submissions")):
        return False  # the crawl-job API's submissions are injected by Spark
    if is_delta_table(data.robots) and not is_plain(data.robots):
        return False
    return crawldb_in_driver(conf, data)


def driver_plan(spark, conf: dict, data: DataDir, now: int) -> FetchPlan:
    """The selection of ``crawldb.selection`` at ``now`` (epoch ms), on the whole crawldb."""
    crawldb = arrow_table(data.crawldb, CRAWLDB, list(selection.DUE_COLUMNS))
    chosen = driver_selection(crawldb, conf, now, partial(host_pauses, conf, data))
    per_host, due_count, shares = round_plan(spark, conf, data, [selection.host_figures(chosen)])
    return FetchPlan(selection.within_shares(chosen, shares), per_host, due_count)


def driver_selection(crawldb, conf: dict, now: int, pauses_of=lambda hosts: {}):
    """Steps 1 to 3 of ``crawldb.selection`` on the Arrow table ``crawldb``: the
    candidates within the budget. ``pauses_of``: a set of hosts -> their pauses."""
    due = due_in_scope(crawldb, conf, now, url_filter_of(conf))
    pauses = pauses_of(set(due.column("host").to_pylist()))
    chosen = selection.candidates(due, conf, now, selection.highest(due), pauses)
    chosen = selection.within_budget_reach(chosen, conf["generate.topN"])
    if conf["generate.topN"] < 0:
        return chosen
    quotas = budget_quotas(conf, [selection.tier_counts(chosen)])
    limits = selection.budget_limits(selection.best_keys(chosen, quotas), quotas)
    return selection.within_limits(chosen, limits)


def url_filter_of(conf: dict) -> UrlFilter | None:
    """The URL filters that ``generate.filter`` applies again, or None."""
    return UrlFilter(conf) if conf["generate.filter"] else None


def due_in_scope(table, conf: dict, now: int, url_filter: UrlFilter | None):
    """The due rows (``crawldb.selection.due_rows``) whose URL the URL filters still
    keep, with ``generate.filter`` (``url_filter``): a rule added since a URL entered the
    crawldb keeps it out of the fetch list."""
    import pyarrow as pa

    due = selection.due_rows(table, conf, now)
    if url_filter is None or not due.num_rows:
        return due
    urls = due.column("url").to_pylist()
    return due.filter(pa.array([url_filter.reject(url) is None for url in urls]))


def budget_quotas(conf: dict, counts: list[dict]) -> dict[str, int]:
    """Tier -> its quota of ``generate.topN``, from the tiers' counts of each part."""
    totals = {name: sum(part.get(name, 0) for part in counts) for name in TIERS}
    shares = conf["generate.tier.shares"]
    quotas = tier_quotas(conf["generate.topN"], [totals[name] for name in TIERS], shares)
    return dict(zip(TIERS, quotas, strict=True))


def round_plan(spark, conf: dict, data: DataDir, figures: list[dict]):
    """Per host (URLs, pace), how many URLs were chosen, and the round's shares of the
    slow hosts (``fetcher.round.tail.defer``), from the hosts' figures of each part."""
    responses = latest_responses(spark, data.root)
    per_host = {
        host: (urls, host_pace(pause, responses.get(host), conf))
        for part in figures
        for host, (urls, pause) in part.items()
    }
    due_count = sum(urls for urls, _ in per_host.values())
    shares = round_shares(per_host, conf) if conf["fetcher.round.tail.defer"] else {}
    for host, share in shares.items():
        per_host[host] = (share, per_host[host][1])
    return per_host, due_count, shares


def spark_plan(spark, conf, data: DataDir, crawldb, now: int, held: list) -> FetchPlan:
    """The same selection by Spark's tasks on ``crawldb`` (a DataFrame); the frames it
    cached are added to ``held``, for the caller to release. The passes over the cached
    candidates take only the columns they read across to Python."""
    settings = conf.as_dict()  # as shipped to a task (with the regex rules' text)
    chosen = spark_candidates(spark, crawldb, settings, now, data, held).cache()
    held.append(chosen)
    limits = spark_limits(chosen, settings)
    counted = chosen.select(*FIGURE_COLUMNS)
    figures = parts(counted, partial(_figures_within, limits))
    per_host, due_count, shares = round_plan(spark, settings, data, figures)
    selected = chosen.mapInArrow(partial(_selected_task, limits, shares), CANDIDATE_DDL)
    return FetchPlan(selected, per_host, due_count)


def spark_selection(spark, crawldb, conf: dict, now: int, data=None) -> list:
    """Steps 1 to 3 of ``crawldb.selection`` by Spark's tasks at ``now``: the candidates
    within the budget, collected (what was cached on the way is released). Without
    ``data``, no host has a cached robots.txt; ``conf``: the settings as a dict, as
    shipped to a task."""
    held: list = []
    try:
        chosen = spark_candidates(spark, crawldb, conf, now, data, held)
        limits = spark_limits(chosen, conf)
        return chosen.mapInArrow(partial(_selected_task, limits, {}), CANDIDATE_DDL).collect()
    finally:
        for frame in held:
            frame.unpersist()


def spark_limits(chosen, conf: dict) -> dict | None:
    """Step 3's limits (``crawldb.selection.budget_limits``) of the candidates
    ``chosen``, or None without ``generate.topN``: the tiers' counts, then each
    partition's best keys, the tier and the keys alone read by Python."""
    if conf["generate.topN"] < 0:
        return None
    quotas = budget_quotas(conf, parts(chosen.select("tier"), selection.tier_counts))
    keys = chosen.select(*selection.KEY_COLUMNS)
    best = keys.mapInArrow(partial(_best_keys_task, quotas), KEY_DDL).toArrow()
    return selection.budget_limits(best, quotas)


def spark_candidates(spark, crawldb, conf: dict, now: int, data: DataDir | None, held: list):
    """Steps 1 and 2 by Spark: the highest score and PageRank of the due rows, then
    each partition of the due rows by ``group_key``, its candidates. The hosts' group
    keys are cached (added to ``held``) and counted before the rows are joined to them."""
    from pyspark.sql import functions as F

    from crawldb.selection import GENERATED

    wanted = [*selection.DUE_COLUMNS, *([GENERATED] if conf["generate.update.crawldb"] else [])]
    source = crawldb.select(*[name for name in wanted if name in crawldb.columns])
    # A row due later cannot be due (``due_rows`` asks fetch_time <= now first): left in
    # the scan, so that only a round's worth of rows crosses to Python, not the crawldb.
    source = source.where(F.col("fetch_time") <= F.timestamp_millis(F.lit(now)))
    # Only the columns the due test and the maxima read cross to Python for the maxima.
    tested = [*selection.HIGHEST_COLUMNS, *(["url"] if conf["generate.filter"] else []), GENERATED]
    tested = [name for name in tested if name in source.columns]
    highest_task = partial(_highest_task, conf, now)
    tops = source.select(*tested).mapInArrow(highest_task, HIGHEST_DDL).collect()
    top = selection.combined(tuple(row) for row in tops)
    pauses = spark_pauses(spark, conf, data) if data is not None else {}
    # Only the distinct hosts cross to Python for their group keys; the rows go to their
    # partitions whole and are tested due there, crossing once.
    hosts = source.select("host").distinct()
    keyed_task = partial(_group_keys_task, conf)
    keys = hosts.mapInArrow(keyed_task, "host STRING, group_key STRING").withColumnRenamed(
        "host", "keyed_host"
    )
    keys = keys.cache()
    held.append(keys)
    # Hosts the driver may hold (db.driver.urls) are broadcast to the rows: else every
    # due row is shuffled by host for the join, then again by group key.
    if keys.count() <= conf["db.driver.urls"]:
        keys = F.broadcast(keys)
    keyed = source.join(keys, source["host"].eqNullSafe(keys["keyed_host"]), "left")
    keyed = keyed.drop("keyed_host").repartition("group_key")
    task = partial(_candidates_task, conf, now, top, pauses)
    return keyed.mapInArrow(task, CANDIDATE_DDL)


def spark_pauses(spark, conf: dict, data: DataDir) -> dict[str, float]:
    """Host -> pause of the hosts whose fresh cached robots.txt gives them more than the
    server delay (``crawldb.selection.host_pause``), computed by Spark's tasks."""
    cached = fresh_robots(spark, data, conf)
    if cached is None:
        return {}
    base = float(conf["fetcher.server.delay"])

    def slower(rows):
        for row in rows:
            pause = selection.host_pause(row["robots_status"], row["robots_body"], conf)
            if pause != base:
                yield row["host"], pause

    return dict(cached.rdd.mapPartitions(slower).collect())


def parts(frame, figures_of) -> list:
    """``figures_of`` (a function of an Arrow table giving a JSON-able value) of each
    partition of ``frame``, collected."""
    import json

    task = partial(_figures_task, figures_of)
    return [
        json.loads(row["figures"]) for row in frame.mapInArrow(task, "figures STRING").collect()
    ]


def _whole(batches):
    """The batches of a task as one Arrow table (None when there are none)."""
    import pyarrow as pa

    batches = list(batches)
    return pa.Table.from_batches(batches) if batches else None


def _highest_task(conf: dict, now: int, batches):
    import pyarrow as pa

    url_filter = url_filter_of(conf)  # once per task: plugins are made here
    schema = pa.schema([("pagerank", pa.float64()), ("score", pa.float64())])
    for batch in batches:
        due = due_in_scope(pa.Table.from_batches([batch]), conf, now, url_filter)
        if due.num_rows:
            top = dict(zip(schema.names, selection.highest(due), strict=True))
            yield pa.RecordBatch.from_pylist([top], schema=schema)


def _group_keys_task(conf: dict, batches):
    """Distinct hosts in; each with its group key (``crawldb.selection.group_key``) out."""
    import pyarrow as pa

    key_of = partial(selection.group_key, conf=conf)
    for batch in batches:
        keys = selection.by_host(batch.column("host"), key_of, object)
        yield batch.append_column("group_key", pa.array(keys, pa.string()))


def _candidates_task(conf: dict, now: int, top: tuple, pauses: dict, batches):
    """A partition's rows (it holds its group keys whole) in; its due rows' candidates,
    cut at the budget's reach, out."""
    table = _whole(batches)
    if table is None:
        return
    due = due_in_scope(table.drop_columns(["group_key"]), conf, now, url_filter_of(conf))
    if due.num_rows:
        chosen = selection.candidates(due, conf, now, top, pauses)
        yield from selection.within_budget_reach(chosen, conf["generate.topN"]).to_batches()


def _best_keys_task(quotas: dict, batches):
    table = _whole(batches)
    if table is not None:
        yield from selection.best_keys(table, quotas).to_batches()


def _within(table, limits: dict | None):
    return table if limits is None else selection.within_limits(table, limits)


def _figures_within(limits: dict | None, table):
    return selection.host_figures(_within(table, limits))


def _selected_task(limits: dict | None, shares: dict, batches):
    """The candidates within the budget, then (a partition holds its hosts whole)
    within the round's shares."""
    table = _whole(batches)
    if table is not None:
        yield from selection.within_shares(_within(table, limits), shares).to_batches()


def _figures_task(figures_of, batches):
    import json

    import pyarrow as pa

    table = _whole(batches)
    if table is not None:
        yield pa.RecordBatch.from_pylist([{"figures": json.dumps(figures_of(table))}])


def write_fetchlist(spark, segment, rows, placed: dict, message: str) -> dict:
    """The selected ``rows`` (an Arrow table, times in epoch ms) with their host's
    partition (``placed``), written by the driver as the segment's fetch list table, one
    file in one commit labelled ``message``; returns its URLs by tier."""
    from engine.tables import task_files
    from lib.parquet_file import write_parquet
    from lib.storage import basename

    table, stored = segment.table("fetchlist"), task_files.stored_schema(FETCHLIST)
    run = task_files.new_run(segment.storage, table)
    compression = spark.conf.get("spark.sql.parquet.compression.codec")
    listed = with_partitions(rows, placed).sort_by(
        [("partition", "ascending"), ("host", "ascending"), ("url", "ascending")]
    )
    listed = listed.select(FETCHLIST.names).cast(task_files.python_schema(stored))
    batches = [task_files.as_stored(batch, stored) for batch in listed.to_batches()]
    path = task_files.task_file(table, run, 0, 0, compression)
    count, size = write_parquet(segment.storage, path, batches, stored, compression)
    file = {"file": basename(path), "bytes": size, "rows": count}
    task_files.commit(segment.storage, table, run, [file], stored, message)
    return selection.tier_counts(rows)


def with_partitions(rows, placed):
    """``rows`` (an Arrow table or batch with a ``host`` column) with each row's fetch
    partition, ``placed[host]``, as an ``int32`` column ``partition``."""
    import pyarrow as pa

    partitions = selection.by_host(rows.column("host"), placed.__getitem__, "int32")
    return rows.append_column("partition", pa.array(partitions, pa.int32()))


def due_left(spark, conf: dict, data: DataDir, now: int) -> tuple[int, int]:
    """``(due, deferred)``: the crawldb's URLs due at ``now`` (``crawldb.selection.due_rows``,
    per batch of Spark's tasks), and of them those a round's tail deferred: what a
    crawl that ends leaves to a later one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = ["fetch_time", "score", "reason", selection.GENERATED]

    def counted(batches):
        for batch in batches:
            due = selection.due_rows(pa.Table.from_batches([batch]), conf, now)
            deferred = pc.sum(pc.equal(due.column("reason"), st.REASON_DEFERRED)).as_py()
            yield pa.RecordBatch.from_pydict({"due": [due.num_rows], "deferred": [deferred or 0]})

    frame = read_crawldb(spark, data, millis=True).select(*names)
    totals = frame.mapInArrow(counted, "due BIGINT, deferred BIGINT").groupBy().sum().first()
    return int(totals[0] or 0), int(totals[1] or 0)
