"""The robots.txt cache beside the crawldb (``DIR/robots``, one row per host).

A fetch round reads the entries younger than ``robots.cache.ttl`` for the hosts of its
fetch list, so a new round does not download robots.txt again while it is fresh, and
writes back the answers it fetched (2xx and 4xx; a 5xx or unreachable robots.txt is not
kept, so that it is asked again next round). RFC 9309 asks for no more than 24 hours.
"""

from __future__ import annotations

from crawldb import selection
from crawldb.schema import ROBOTS
from engine.runtime import write_behind
from engine.runtime.layout import DataDir
from engine.tables.delta_commits import upsert_by_host, upsert_hosts
from engine.tables.delta_files import is_delta_table, read_current
from engine.tables.driver_tables import is_plain
from lib.clock import now_ms
from lib.vocabulary import ORIGIN_ROBOTS


def fresh_since(conf, data: DataDir) -> int | None:
    """The oldest time (epoch ms) of a cached robots.txt answer still fresh, or None
    when none can be (no cache, or ``robots.cache.ttl`` off)."""
    ttl = conf["robots.cache.ttl"]
    write_behind.wait("robots")  # the last round's answers
    if ttl <= 0 or not is_delta_table(data.robots):
        return None
    return now_ms() - ttl * 1000


def fresh_robots(spark, data: DataDir, conf, hosts=None):
    """Cached robots answers still fresh: for the hosts in the DataFrame ``hosts``, or
    all of them (None when there is no cache)."""
    from pyspark.sql import functions as F

    oldest = fresh_since(conf, data)
    if oldest is None:
        return None
    table = read_current(spark, data.robots)
    fresh = table.where(F.unix_millis("fetched_at") >= F.lit(oldest))
    if hosts is not None:
        fresh = fresh.join(hosts, "host", "left_semi")
    return fresh.select(
        "host", F.col("http_status").alias("robots_status"), F.col("content").alias("robots_body")
    )


def fresh_robots_rows(conf, data: DataDir, hosts) -> list[tuple]:
    """``fresh_robots``' answers in the driver, through delta-rs: (host, status, body)
    of the cached answers still fresh, of ``hosts``."""
    from engine.tables.driver_tables import python_rows

    oldest = fresh_since(conf, data)
    if oldest is None:
        return []
    columns = ["host", "fetched_at", "http_status", "content"]
    return [
        (row["host"], row["http_status"], row["content"])
        for row in python_rows(data.robots, ROBOTS, columns)
        if row["host"] in hosts and row["fetched_at"] is not None and row["fetched_at"] >= oldest
    ]


def store_robots(spark, data: DataDir, fetch_table: str) -> None:
    """Merge the robots.txt answers of the fetch table at ``fetch_table`` into the cache:
    read and merged in the driver through delta-rs (a table delta-rs cannot read plain
    goes through Spark)."""
    from pyspark.sql import functions as F

    if is_plain(fetch_table):
        upsert_hosts(data.robots, robots_answers(fetch_table), "trawl fetch robots cache")
        return
    fetched = read_current(spark, fetch_table)
    # A redirect hop has its own row; the answer is the hop that ended the chain.
    final = F.col("redirect_to").isNull()
    answers = fetched.where(
        (F.col("origin") == ORIGIN_ROBOTS) & (F.col("http_status") < 500) & final
    )
    answers = answers.dropDuplicates(["host"])
    upsert_by_host(spark, data.robots, answers, ROBOTS, "trawl fetch robots cache")


def robots_answers(fetch_table: str):
    """The fetch table's final robots.txt answers below 500, one a host, as an Arrow
    table of the cache's stored columns."""
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    from engine.tables.task_files import stored_schema

    columns = ["origin", "redirect_to", *ROBOTS.names]
    rows = DeltaTable(fetch_table).to_pyarrow_table(columns=columns)
    kept = pc.and_(
        pc.and_(
            pc.equal(rows.column("origin"), ORIGIN_ROBOTS), pc.is_null(rows.column("redirect_to"))
        ),
        pc.less(rows.column("http_status"), 500),
    )
    answers = rows.filter(kept).select(ROBOTS.names)
    first = {}
    for index, host in enumerate(answers.column("host").to_pylist()):
        first.setdefault(host, index)
    return answers.take(sorted(first.values())).cast(stored_schema(ROBOTS))


def host_pauses(conf: dict, data: DataDir, hosts: set) -> dict[str, float]:
    """Host -> its pause (``crawldb.selection.host_pause``), for ``hosts``: the server
    delay, or more from its fresh cached robots.txt."""
    pauses = dict.fromkeys(hosts, float(conf["fetcher.server.delay"]))
    for host, status, body in fresh_robots_rows(conf, data, pauses):
        pauses[host] = selection.host_pause(status, body, conf)
    return pauses
