"""The fetch tasks' work rows (``crawldb.fetch_work``'s rule) put together where the
crawldb is: in the driver for a small crawldb (``db.driver.urls``: the fetch list, the
caches and the crawldb read through delta-rs, handed to Spark as one Arrow table), else
by Spark's tasks (each table's rows turned into work rows per batch, then a union).
Either way the rows then go to the fetch tasks by ``repartitionById`` on ``partition``.
"""

from __future__ import annotations

from functools import partial

from crawldb import fetch_work
from crawldb.schema import CRAWLDB, FETCHLIST, ROBOTS, SOFT404
from engine.caches import probe_cache, robots_cache
from engine.caches.fetch_pacing import hosts_not_before
from engine.executors.driver_update import crawldb_in_driver
from engine.runtime.layout import DataDir, Segment
from engine.tables.delta_files import delta_columns, is_delta_table, read_current
from engine.tables.driver_tables import arrow_table, is_plain
from engine.tables.store import read_crawldb
from lib.fetching.agent import require_named_agent

WORK_DDL = (
    "url STRING, host STRING, depth INT, score DOUBLE, etag STRING, last_modified STRING,"
    " tier STRING, priority DOUBLE, payload_digest STRING, capture_time BIGINT,"
    " capture_record_id STRING,"
    " partition INT, robots_status INT, robots_body BINARY, probed BOOLEAN,"
    " known_url STRING, not_before BIGINT"
)


def in_driver(conf: dict, data: DataDir, segment: Segment) -> bool:
    """Whether the work rows are put together in the driver: a crawldb the driver takes,
    a fetch list with partitions, and caches read plain."""
    fetchlist = segment.table("fetchlist")
    if not crawldb_in_driver(conf, data) or not is_plain(fetchlist):
        return False
    if "partition" not in delta_columns(fetchlist):
        return False  # written before partitioning: Spark's way hashes the hosts
    return all(is_plain(path) or not is_delta_table(path) for path in (data.robots, data.soft404))


def work_frame(spark, conf: dict, data: DataDir, segment: Segment, partitions: int):
    """The segment's work rows as a DataFrame, put together where the crawldb is."""
    if in_driver(conf, data, segment):
        return spark.createDataFrame(work_table(conf, data, segment))
    return spark_work(spark, conf, data, segment, partitions)


def work_table(conf: dict, data: DataDir, segment: Segment):
    """The work rows as one Arrow table, every table read whole through delta-rs."""
    import pyarrow as pa

    listed = arrow_table(segment.table("fetchlist"), FETCHLIST)
    hosts, partitions = listed.column("host"), listed.column("partition").cast(pa.int32())
    placed = dict(zip(hosts.to_pylist(), partitions.to_pylist(), strict=True))
    require_named_agent(conf, placed)  # before any request
    named = listed.column("capture_segment").unique().drop_null().to_pylist()
    parts = [fetch_work.listed_rows(listed, archived(data, named))]
    if (oldest := robots_cache.fresh_since(conf, data)) is not None:
        robots = arrow_table(data.robots, ROBOTS, ["host", "fetched_at", "http_status", "content"])
        parts.append(fetch_work.robots_rows(robots, placed, oldest))
    if (oldest := probe_cache.fresh_since(conf, data)) is not None:
        probes = arrow_table(data.soft404, SOFT404, ["host", "probed_at"])
        parts.append(fetch_work.probe_rows(probes, placed, oldest))
    moments = hosts_not_before(conf, data, segment, placed)
    parts.append(fetch_work.pacing_rows(moments, placed))
    crawldb = arrow_table(data.crawldb, CRAWLDB, ["url", "host", "last_fetch_time"])
    parts.append(fetch_work.known_rows(crawldb, placed))
    return pa.concat_tables(parts)


def with_partition(fetchlist, partitions: int):
    """The fetch list with its ``partition`` column (a list written before generate
    placed hosts gets one by a hash of the host)."""
    from pyspark.sql import functions as F

    if "partition" in fetchlist.columns:
        return fetchlist
    return fetchlist.withColumn("partition", F.pmod(F.xxhash64("host"), F.lit(partitions)))


def spark_work(spark, conf: dict, data: DataDir, segment: Segment, partitions: int):
    """The work rows by Spark's tasks: each table's batches turned into work rows by
    ``crawldb.fetch_work``'s functions, the round's hosts (host -> partition) given to
    every task as a broadcast, then one union."""
    from pyspark.sql import functions as F

    fetchlist = with_partition(read_current(spark, segment.table("fetchlist")), partitions)
    if "capture_time" in fetchlist.columns:  # in epoch ms, as the work rows have times
        fetchlist = fetchlist.withColumn("capture_time", F.unix_millis("capture_time"))
    pairs = fetchlist.select("host", F.col("partition").cast("int")).distinct().collect()
    placed = {row["host"]: row["partition"] for row in pairs}
    require_named_agent(conf, placed)  # before any request
    shared = spark.sparkContext.broadcast(placed)
    listed = partial(fetch_work.listed_rows, archived=archived(data, capture_segments(fetchlist)))
    parts = [fetchlist.mapInArrow(partial(_work_task, listed, None, ()), WORK_DDL)]
    if (oldest := robots_cache.fresh_since(conf, data)) is not None:
        robots = read_current(spark, data.robots).select(
            "host", F.unix_millis("fetched_at").alias("fetched_at"), "http_status", "content"
        )
        parts.append(
            robots.mapInArrow(
                partial(_work_task, fetch_work.robots_rows, shared, (oldest,)), WORK_DDL
            )
        )
    if (oldest := probe_cache.fresh_since(conf, data)) is not None:
        probes = read_current(spark, data.soft404)
        probes = probes.select("host", F.unix_millis("probed_at").alias("probed_at"))
        parts.append(
            probes.mapInArrow(
                partial(_work_task, fetch_work.probe_rows, shared, (oldest,)), WORK_DDL
            )
        )
    moments = hosts_not_before(conf, data, segment, placed)
    if moments:
        parts.append(spark.createDataFrame(fetch_work.pacing_rows(moments, placed)))
    crawldb = read_crawldb(spark, data).select("url", "host", "last_fetch_time")
    parts.append(
        crawldb.mapInArrow(partial(_work_task, fetch_work.known_rows, shared, ()), WORK_DDL)
    )
    work = parts[0]
    for part in parts[1:]:
        work = work.unionByName(part)
    return work


def capture_segments(fetchlist) -> list[str]:
    """The segments the fetch list's archived captures are in (none in an older list)."""
    if "capture_segment" not in fetchlist.columns:
        return []
    named = fetchlist.select("capture_segment").distinct().dropna().collect()
    return [row["capture_segment"] for row in named]


def archived(data: DataDir, named: list[str]) -> frozenset:
    """Of the segments ``named``, those whose WARC files are still there
    (``segments.retention.archive`` removes them)."""
    return frozenset(name for name in named if data.storage.is_dir(data.segment(name).warc_dir))


def _work_task(rule, shared, args: tuple, batches):
    """Task side: each batch as work rows by ``rule`` (a ``crawldb.fetch_work`` function),
    given the round's hosts (``shared``, a broadcast; None: the rule takes the batch
    alone) and ``args``."""
    import pyarrow as pa

    for batch in batches:
        table = pa.Table.from_batches([batch])
        rows = rule(table) if shared is None else rule(table, shared.value, *args)
        yield from rows.to_batches()
