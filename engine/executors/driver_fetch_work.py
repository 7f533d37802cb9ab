"""The fetch tasks' work rows, put together in the driver for a small crawldb
(``db.driver.urls``): the plain-Python twin of ``jobs.fetch.with_cached``.

Each fetch task gets its hosts' URLs with, beside them, its hosts' cached robots.txt
answers, fresh soft-404 probes and the URLs fetched before. By Spark that is a scan of
the fetch list, the two caches and the crawldb, and their joins and unions: half a dozen
Spark jobs before the round's first request. The same rows are read here through
delta-rs and handed to Spark as one Arrow table, for the tasks' ``repartitionById``.
"""

from __future__ import annotations

from crawldb.schema import CRAWLDB, FETCHLIST, SOFT404
from engine.caches.fetch_pacing import hosts_not_before
from engine.caches.robots_cache import fresh_robots_rows
from engine.executors.driver_update import crawldb_in_driver
from engine.runtime import write_behind
from engine.runtime.layout import DataDir, Segment
from engine.tables.delta_files import delta_columns, is_delta_table
from engine.tables.driver_tables import arrow_table, is_plain, python_rows
from lib.clock import now_ms

WORK_COLUMNS = (
    ("url", "string"),
    ("host", "string"),
    ("depth", "int32"),
    ("score", "float64"),
    ("etag", "string"),
    ("last_modified", "string"),
    ("tier", "string"),
    ("priority", "float64"),
    ("payload_digest", "string"),
    ("capture_time", "int64"),
    ("partition", "int32"),
    ("robots_status", "int32"),
    ("robots_body", "binary"),
    ("probed", "bool"),
    ("known_url", "string"),
    ("not_before", "int64"),
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


def work_table(conf: dict, data: DataDir, segment: Segment):
    """``jobs.fetch.with_cached``'s rows as one Arrow table: the fetch list's, then a row
    per cached robots.txt, fresh probe and URL fetched before of the list's hosts, and a
    row per host still in its pause from the last round. The list's columns are taken
    as they are read, not row by row."""
    import pyarrow as pa

    listed = arrow_table(segment.table("fetchlist"), FETCHLIST)
    hosts, partitions = listed.column("host"), listed.column("partition").cast(pa.int32())
    placed = dict(zip(hosts.to_pylist(), partitions.to_pylist(), strict=True))
    own = work_columns({name: listed.column(name) for name in listed.column_names}, listed.num_rows)
    rows = []
    for host, status, body in fresh_robots_rows(conf, data, placed):
        cached = {"robots_status": status, "robots_body": body}
        rows.append({"host": host, "partition": placed[host], **cached})
    for host in fresh_probes(conf, data, placed):
        rows.append({"host": host, "partition": placed[host], "probed": True})
    rows += pacing_rows(conf, data, segment, placed)
    schema = pa.schema(WORK_COLUMNS)
    before = fetched_before(data, placed, listed.column("url"))
    return pa.concat_tables([own, pa.Table.from_pylist(rows, schema=schema), before])


def work_columns(given: dict, count: int):
    """An Arrow table of ``count`` work rows: the ``given`` columns (name -> Arrow
    column) cast to the work's types, NULL in the others."""
    import pyarrow as pa

    columns = {
        name: given[name].cast(kind) if name in given else pa.nulls(count, kind)
        for name, kind in WORK_COLUMNS
    }
    return pa.table(columns, schema=pa.schema(WORK_COLUMNS))


def pacing_rows(conf: dict, data: DataDir, segment: Segment, placed: dict) -> list[dict]:
    """A row per host asked too recently to be asked at once (``engine.caches.fetch_pacing``),
    in its host's partition, with the moment it may be asked again."""
    moments = hosts_not_before(conf, data, segment, placed)
    return [
        {"host": host, "partition": placed[host], "not_before": moment}
        for host, moment in moments.items()
    ]


def fresh_probes(conf: dict, data: DataDir, hosts: dict):
    """The hosts of ``hosts`` whose cached soft-404 probe answer is still fresh."""
    ttl = conf["fetcher.soft404.probe.ttl"]
    if not conf["fetcher.soft404.probe"] or ttl <= 0:
        return
    write_behind.wait("soft404")  # the last round's answers
    if not is_delta_table(data.soft404):
        return
    oldest = now_ms() - ttl * 1000
    for row in python_rows(data.soft404, SOFT404, ["host", "probed_at"]):
        if row["host"] in hosts and row["probed_at"] is not None and row["probed_at"] >= oldest:
            yield row["host"]


def fetched_before(data: DataDir, placed: dict, listed):
    """The work rows (``known_url``, ``host``, ``partition``) of the crawldb's URLs of the
    hosts ``placed`` (host -> partition) fetched before and not ``listed``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    crawldb = arrow_table(data.crawldb, CRAWLDB, ["url", "host", "last_fetch_time"])
    hosts = pa.array(list(placed), pa.string())
    of_hosts = pc.is_in(crawldb.column("host"), value_set=hosts)
    unlisted = pc.invert(pc.is_in(crawldb.column("url"), value_set=listed.combine_chunks()))
    fetched = pc.is_valid(crawldb.column("last_fetch_time"))
    known = crawldb.filter(pc.and_(pc.and_(fetched, of_hosts), unlisted))
    where = pc.index_in(known.column("host"), value_set=hosts)
    given = {
        "host": known.column("host"),
        "partition": pa.array(list(placed.values()), pa.int32()).take(where),
        "known_url": known.column("url"),
    }
    return work_columns(given, known.num_rows)


def work_frame(spark, conf: dict, data: DataDir, segment: Segment):
    """The work rows as a Spark DataFrame, from one Arrow table."""
    return spark.createDataFrame(work_table(conf, data, segment))
