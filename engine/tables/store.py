"""The crawldb Delta table: create it, read it, merge changed rows into it.

Every change to the crawldb is one Delta commit keyed on ``url`` (the matched row
replaced, the new one inserted), so a job killed half way leaves the previous version intact and
analysts can time-travel between rounds. Commits carry a ``userMetadata`` label naming
the job and segment.
"""

from __future__ import annotations

from crawldb.schema import CRAWLDB
from engine.runtime.layout import DataDir
from engine.tables.delta_commits import delta_commit_message
from engine.tables.delta_files import delta_columns, is_delta_table, read_current
from engine.tables.file_rewrite import create_with_rows, upsert_rows
from engine.tables.frames import with_millis
from engine.tables.task_files import stored_schema
from lib.errors import MissingInput


def crawldb_exists(spark, data: DataDir) -> bool:
    """True when the data directory has a crawldb Delta table."""

    return is_delta_table(data.crawldb)


def ensure_crawldb(spark, data: DataDir) -> None:
    """Create the empty crawldb table when it does not exist yet."""
    if not crawldb_exists(spark, data):
        create_crawldb(spark, data, spark.createDataFrame([], CRAWLDB.ddl), "trawl create crawldb")


def create_crawldb(spark, data: DataDir, rows, message: str) -> None:
    """Write a new crawldb table holding ``rows`` (full crawldb rows) as its first
    version; fails if one exists already."""
    schema = stored_schema(CRAWLDB)
    create_with_rows(spark, data.crawldb, data.storage, rows.select(*schema.names), schema, message)


def read_crawldb(spark, data: DataDir, millis: bool = False):
    """The crawldb as a DataFrame (times as epoch ms when ``millis``)."""
    if not crawldb_exists(spark, data):
        raise MissingInput(f"{data.root} has no crawldb: run inject (or crawl --seeds FILE) first")
    frame = read_current(spark, data.crawldb)
    frame = with_declared_columns(frame)
    return with_millis(frame, CRAWLDB) if millis else frame


def with_declared_columns(frame):
    """The crawldb frame with the columns of ``CRAWLDB`` that an older table lacks, as nulls,
    so that readers of a crawldb made by an earlier Trawl see the current schema."""
    from pyspark.sql import functions as F

    for name, kind in CRAWLDB.columns:
        if name not in frame.columns:
            frame = frame.withColumn(name, F.lit(None).cast(kind))
    return frame


def upgrade_crawldb(spark, data: DataDir) -> list[str]:
    """Add to the crawldb table the columns ``CRAWLDB`` declares and it lacks (one Delta
    commit, old rows null); returns their names. Writers call it before a MERGE."""
    existing = set(delta_columns(data.crawldb))
    missing = [(name, kind) for name, kind in CRAWLDB.columns if name not in existing]
    if missing:
        columns = ", ".join(f"`{name}` {kind}" for name, kind in missing)
        with delta_commit_message(spark, "trawl upgrade crawldb schema"):
            spark.sql(f"ALTER TABLE delta.`{data.crawldb}` ADD COLUMNS ({columns})")
    return [name for name, _ in missing]


def merge_rows(spark, data: DataDir, rows, message: str, given: int | None = None) -> None:
    """Upsert a DataFrame of full crawldb rows, keyed on url, in one Delta commit: by
    rewriting the files that hold the URLs (``engine.tables.file_rewrite``), or by Spark's MERGE
    for a table that cannot be rewritten so. ``given``: how many rows ``rows`` holds,
    when the caller knows."""
    from delta.tables import DeltaTable

    upgrade_crawldb(spark, data)
    if upsert_rows(spark, data.crawldb, data.storage, rows, message, given):
        return
    table = DeltaTable.forPath(spark, data.crawldb)
    with delta_commit_message(spark, message):
        (
            table.alias("t")
            .merge(rows.alias("s"), "t.url = s.url")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )


def crawldb_version(spark, data: DataDir) -> int:
    """The current Delta version of the crawldb."""
    from delta.tables import DeltaTable

    return DeltaTable.forPath(spark, data.crawldb).history(1).collect()[0]["version"]
