"""updatedb's step that keeps the hostdb (``hostdb.enabled``): ``crawldb.hostdb``'s
partial rows of the round (the URLs whose status changed, the segment's requests, the
robots.txt answers of the hosts it asked) folded into ``DIR/hostdb``, merged by host
through delta-rs in the driver (a row per host, as the robots.txt cache is).

The URL counts are kept from what each round changed, so they hold only while every
commit to the crawldb since the hostdb's last is updatedb's own or one that changes no
status (``NEUTRAL``; a RESTORE counts as the version it restores). Otherwise (the
first round, an inject, a dedup, an opt-out, a restore further back) they are counted
again from the crawldb: in the driver for a crawldb the driver updates, else by Spark's
tasks grouped by host. Each hostdb commit names the segment and the crawldb version it
holds for; a rerun of a round whose hostdb commit was made adds nothing twice.
"""

from __future__ import annotations

import re

from crawldb.hostdb import fetch_figures, host_rows, partial_table, robots_figures, status_changes
from crawldb.schema import CRAWLDB, FETCH, HOSTDB, ROBOTS
from engine.runtime import write_behind
from engine.runtime.layout import DataDir, Segment
from engine.tables.delta_files import is_delta_table, read_current
from engine.tables.driver_tables import arrow_table
from engine.tables.task_files import stored_schema, stored_table

LABEL = "trawl updatedb hostdb"
# Commits to the crawldb that change no URL's status or host.
NEUTRAL = (
    "trawl generate",
    "trawl rank",
    "trawl maintain",
    "trawl create crawldb",
    "trawl upgrade crawldb schema",
)
FIGURE_COLUMNS = [
    "host",
    "origin",
    "fetch_status",
    "reason",
    "http_status",
    "duration_ms",
    "fetched_at",
    "redirect_to",
]


def counts_hold(data: DataDir) -> bool:
    """Whether the hostdb's URL counts hold for the crawldb as it is now (read before
    updatedb commits): the crawldb's commits since the version the hostdb names change
    no status."""
    from deltalake import DeltaTable

    recorded = _last_label(data).get("crawldb")
    if recorded is None:
        return False
    crawldb = DeltaTable(data.crawldb)
    cursor = crawldb.version()
    if cursor < recorded:
        return False
    commits = {commit["version"]: commit for commit in crawldb.history(cursor - recorded)}
    while cursor > recorded:
        commit = commits.get(cursor, {})
        if commit.get("operation") == "RESTORE":
            cursor = _restored(commit)
        elif (commit.get("userMetadata") or "").startswith(NEUTRAL):
            cursor -= 1
        else:
            return False
    return cursor == recorded


def _last_label(data: DataDir) -> dict:
    """The segment and crawldb version the hostdb's current version names ({} if none):
    its last commit's label, or, for a RESTORE, the label of the version restored."""
    from deltalake import DeltaTable

    if not is_delta_table(data.hostdb):
        return {}
    table = DeltaTable(data.hostdb)
    commit = table.history(1)[0]
    if commit.get("operation") == "RESTORE":  # the whole history, only to follow it
        commits = {commit["version"]: commit for commit in table.history()}
        while commit.get("operation") == "RESTORE":
            commit = commits.get(_restored(commit), {})
    found = re.fullmatch(rf"{LABEL} segment=(\S+) crawldb=(\d+)", commit.get("userMetadata") or "")
    return {"segment": found[1], "crawldb": int(found[2])} if found else {}


def _restored(commit: dict) -> int:
    """The version a RESTORE commit (by Spark or delta-rs) restored."""
    return int(commit["operationParameters"]["version"])


def driver_changes(crawldb, changed):
    """The round's partial rows of URL counts, in the driver: ``changed`` (the rows
    updatedb writes) against ``crawldb`` (the crawldb before); both Arrow tables."""
    import pyarrow as pa
    import pyarrow.compute as pc

    at = pc.index_in(changed.column("url"), value_set=crawldb.column("url").combine_chunks())
    columns = {
        "host": changed.column("host"),
        "status": changed.column("status"),
        "old_host": crawldb.column("host").combine_chunks().take(at),
        "old_status": crawldb.column("status").combine_chunks().take(at),
    }
    return status_changes(pa.table({k: v.cast(pa.string()) for k, v in columns.items()}))


def spark_changes(old, changed):
    """The round's partial rows of URL counts, by Spark's tasks: ``changed`` (the rows
    updatedb writes) against ``old`` (the crawldb before), grouped by host; collected
    before the commit (both frames read the crawldb)."""
    from pyspark.sql import functions as F

    before = old.select("url", F.col("host").alias("old_host"), F.col("status").alias("old_status"))
    pairs = changed.select("url", "host", "status").join(before, "url", "left").drop("url")
    return _by_host(pairs)


def _by_host(pairs):
    """``status_changes`` of a frame of (host, status, old_host, old_status), by Spark's
    tasks, each host's rows in one task; the partial rows as an Arrow table."""
    rows = pairs.repartition("host").mapInArrow(_change_batches, HOSTDB.python_ddl).toArrow()
    return partial_table(rows.to_pylist())


def _change_batches(batches):
    import pyarrow as pa

    found = list(batches)
    if found:
        yield from status_changes(pa.Table.from_batches(found)).to_batches()


def update_hostdb(
    spark, conf: dict, data: DataDir, segment: Segment, changes, held: bool, in_driver: bool
) -> int:
    """Fold the round into the hostdb (``changes``: its partial rows of URL counts;
    ``held``: ``counts_hold`` before the round's commit); returns the hosts written."""
    import pyarrow as pa

    if _last_label(data).get("segment") == segment.name:
        return 0  # a rerun after its hostdb commit: the round is in it
    if not held:
        changes = recounted(spark, data, in_driver)
    requests = fetch_figures(
        arrow_table(segment.table("fetch"), FETCH, FIGURE_COLUMNS), segment.name
    )
    hosts = set(requests["host"].to_pylist())
    parts = pa.concat_tables([changes, requests, robots_figures(_robots_of(data, hosts), conf)])
    return _folded_into(data, parts, segment.name, recount=not held)


def recount_hostdb(spark, data: DataDir, in_driver: bool) -> int:
    """Count the hostdb's URL counts again from the crawldb as it is (its other figures
    kept), as the first round after an inject does; returns the hosts written."""
    return _folded_into(data, recounted(spark, data, in_driver), "-", recount=True)


def _folded_into(data: DataDir, parts, segment: str, recount: bool) -> int:
    """Fold the partial rows ``parts`` into the hostdb (``crawldb.hostdb.host_rows``) and
    write the hosts' rows, labelled with ``segment`` and the crawldb's version; returns
    the hosts written."""
    from deltalake import DeltaTable

    old = arrow_table(data.hostdb, HOSTDB) if is_delta_table(data.hostdb) else partial_table([])
    rows = host_rows(old, parts, recount=recount)
    version = DeltaTable(data.crawldb).version()
    _write(data, rows, f"{LABEL} segment={segment} crawldb={version}", replace=recount)
    return rows.num_rows


def recounted(spark, data: DataDir, in_driver: bool):
    """Partial rows counting every URL of the crawldb by host and status."""
    import pyarrow as pa

    if in_driver:
        crawldb = arrow_table(data.crawldb, CRAWLDB, ["host", "status"])
        nulls = pa.nulls(crawldb.num_rows, pa.string())
        return status_changes(
            crawldb.append_column("old_host", nulls).append_column("old_status", nulls)
        )
    from pyspark.sql import functions as F

    none = F.lit(None).cast("string")
    pairs = read_current(spark, data.crawldb).select(
        "host", "status", none.alias("old_host"), none.alias("old_status")
    )
    return _by_host(pairs)


def _robots_of(data: DataDir, hosts: set):
    """The robots.txt cache's answers for ``hosts`` (this round's, once written)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    write_behind.wait("robots")
    if not is_delta_table(data.robots):
        return _no_robots()
    cache = arrow_table(data.robots, ROBOTS, ["host", "http_status", "content", "fetched_at"])
    return cache.filter(pc.is_in(cache["host"], value_set=pa.array(sorted(hosts), pa.string())))


def _no_robots():
    import pyarrow as pa

    return pa.table(
        {
            "host": pa.array([], pa.string()),
            "http_status": pa.array([], pa.int32()),
            "content": pa.array([], pa.binary()),
            "fetched_at": pa.array([], pa.int64()),
        }
    )


def _write(data: DataDir, rows, message: str, replace: bool) -> None:
    """Write the hosts' rows: the whole table (``replace``) or merged by host."""
    from deltalake import write_deltalake
    from deltalake.transaction import CommitProperties

    from engine.tables.delta_commits import upsert_hosts

    stored = stored_table(rows.to_pylist(), stored_schema(HOSTDB))
    if replace or not is_delta_table(data.hostdb):
        label = CommitProperties(custom_metadata={"userMetadata": message})
        write_deltalake(data.hostdb, stored, mode="overwrite", commit_properties=label)
    else:
        upsert_hosts(data.hostdb, stored, message)
