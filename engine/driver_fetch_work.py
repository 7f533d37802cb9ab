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
from engine import write_behind
from engine.delta_files import delta_columns, is_delta_table
from engine.driver_tables import arrow_table, is_plain, python_rows
from engine.driver_update import crawldb_in_driver
from engine.fetch_pacing import hosts_not_before
from engine.layout import DataDir, Segment
from engine.robots_cache import fresh_robots_rows
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


def work_rows(conf: dict, data: DataDir, segment: Segment) -> list[dict]:
    """``jobs.fetch.with_cached``'s rows: the fetch list's, then a row per cached
    robots.txt, fresh probe and URL fetched before of the list's hosts, and a row per
    host still in its pause from the last round."""
    listed = python_rows(segment.table("fetchlist"), FETCHLIST)
    placed = {row["host"]: row["partition"] for row in listed}
    rows = [{name: row.get(name) for name, _ in WORK_COLUMNS} for row in listed]
    for host, status, body in fresh_robots_rows(conf, data, placed):
        cached = {"robots_status": status, "robots_body": body}
        rows.append({"host": host, "partition": placed[host], **cached})
    for host in fresh_probes(conf, data, placed):
        rows.append({"host": host, "partition": placed[host], "probed": True})
    for host, url in fetched_before(data, placed, {row["url"] for row in listed}):
        rows.append({"host": host, "partition": placed[host], "known_url": url})
    return rows + pacing_rows(conf, data, segment, placed)


def pacing_rows(conf: dict, data: DataDir, segment: Segment, placed: dict) -> list[dict]:
    """A row per host asked too recently to be asked at once (``engine.fetch_pacing``),
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


def fetched_before(data: DataDir, hosts: dict, listed: set):
    """(host, url) of the crawldb's URLs of ``hosts`` fetched before and not ``listed``."""
    import pyarrow.compute as pc

    crawldb = arrow_table(data.crawldb, CRAWLDB, ["url", "host", "last_fetch_time"])
    crawldb = crawldb.filter(pc.is_valid(crawldb.column("last_fetch_time")))
    for host, url in zip(
        crawldb.column("host").to_pylist(), crawldb.column("url").to_pylist(), strict=True
    ):
        if host in hosts and url not in listed:
            yield host, url


def work_frame(spark, conf: dict, data: DataDir, segment: Segment):
    """The work rows as a Spark DataFrame, from one Arrow table."""
    import pyarrow as pa

    schema = pa.schema([(name, kind) for name, kind in WORK_COLUMNS])
    table = pa.Table.from_pylist(work_rows(conf, data, segment), schema=schema)
    return spark.createDataFrame(table)
