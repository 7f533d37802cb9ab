"""Delta commits: their label in the table's history, and per-host upserts by delta-rs."""

from __future__ import annotations

from contextlib import contextmanager

from crawldb.schema import Table
from engine.runtime import write_behind


@contextmanager
def delta_commit_message(spark, message: str):
    """Label the Delta commits made inside the block (``userMetadata`` in the history),
    and the Spark jobs that make them (their description in the UI and event log)."""
    key = write_behind.COMMIT_LABEL
    spark.conf.set(key, message)
    spark.sparkContext.setJobDescription(message)
    try:
        yield
    finally:
        spark.conf.unset(key)
        spark.sparkContext.setJobDescription(None)


def upsert_by_host(spark, path: str, rows, table: Table, message: str, newer=None) -> None:
    """Merge per-host ``rows`` (a DataFrame, cast to ``table``'s columns) into the Delta
    table at ``path``, one commit labelled ``message`` (``upsert_hosts``)."""
    from pyspark.sql import functions as F

    answers = rows.select(*[F.col(name).cast(kind) for name, kind in table.columns]).toArrow()
    upsert_hosts(path, answers, message, newer)


def upsert_hosts(path: str, answers, message: str, newer=None) -> None:
    """Merge per-host rows (an Arrow table of the table's columns as stored) into the
    Delta table at ``path``, one commit labelled ``message``: a host's row replaces the
    old one (when the SQL condition ``newer`` holds, if given), a new host's is
    inserted. The first rows make the table's first version (one write, not an empty
    table and a MERGE).

    Merged in the driver by delta-rs: the tables merged so (the robots.txt and soft-404
    caches) hold a row per host, which Spark's MERGE took a dozen jobs to commit."""
    from deltalake import DeltaTable, write_deltalake
    from deltalake.transaction import CommitProperties

    label = CommitProperties(custom_metadata={"userMetadata": message})
    if not DeltaTable.is_deltatable(path):
        write_deltalake(path, answers, mode="error", commit_properties=label)
        return
    merge = DeltaTable(path).merge(
        answers, "t.host = s.host", source_alias="s", target_alias="t", commit_properties=label
    )
    merge.when_matched_update_all(predicate=newer).when_not_matched_insert_all().execute()
