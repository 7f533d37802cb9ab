"""A small Delta table's current version, read through the Parquet files its log lists.

Spark's Delta reader builds the table's snapshot with Spark jobs of its own before the
query runs: three or four per table (the log's state, then the files to scan), seconds
of every round for the small tables a round reads before its first request (its fetch
list, the robots.txt and soft-404 caches). delta-rs (the ``deltalake`` package, which
also commits the fetch table) reads the same log in the driver without a Spark job, and
Spark then reads the listed files as plain Parquet (docs/benchmarks.md, bench_rounds).

Only a table whose files hold the whole of its rows can be read so: reader protocol 1
(no deletion vectors, no column mapping) and no partition columns (their values live in
the log, not the files). Any other table is read by Spark's Delta reader, as before.
"""

from __future__ import annotations

import json

from engine.runtime.session import session_conf
from lib.storage import basename


def read_current(spark, path: str):
    """The rows of the Delta table at ``path`` (local or ``hdfs://``), as a DataFrame."""
    from deltalake import DeltaTable

    table = DeltaTable(path)
    if not plain_files(table):
        return spark.read.format("delta").load(path)
    return read_files(spark, table)


def read_files(spark, table):
    """The rows of the delta-rs ``table``'s current files (``plain_files`` holds), as a
    DataFrame."""
    from pyspark.sql.types import StructType

    schema = StructType.fromJson(json.loads(table.schema().to_json()))
    files = table.file_uris()
    if not files:
        return spark.createDataFrame([], schema)
    # No block locations, as Spark's Delta reader asks none: with them, a local session
    # reading from HDFS left tasks waiting for a locality that never came (the local
    # scheduler offers its cores again only when a task ends).
    with session_conf(spark, {"spark.sql.sources.ignoreDataLocality": "true"}):
        return spark.read.schema(schema).parquet(*files)


def is_delta_table(path: str) -> bool:
    """Whether a Delta table is at ``path``, from its log (no Spark job)."""
    from deltalake import DeltaTable

    return DeltaTable.is_deltatable(path)


def delta_columns(path: str) -> list[str]:
    """The column names of the Delta table at ``path``, from its log (no Spark job)."""
    from deltalake import DeltaTable

    return [field.name for field in DeltaTable(path).schema().fields]


def plain_files(table) -> bool:
    """Whether the delta-rs ``table``'s Parquet files alone give its rows."""
    protocol = table.protocol()
    return protocol.min_reader_version == 1 and not table.metadata().partition_columns


def table_rows(path: str) -> int | None:
    """The rows of the table's current version, from its log's file statistics (no
    file is read); None when a file has no row count."""
    from deltalake import DeltaTable

    return LoggedFiles.of(DeltaTable(path)).rows


class LoggedFiles:
    """The current files of a delta-rs table, from one read of its log's add actions:
    what a rewrite needs of them (names, paths, sizes) and the rows they hold."""

    def __init__(self, table, paths: list[str], sizes: list[int], rows: int | None):
        self.table = table  # delta-rs, at the version read
        self.entries = {basename(p): (p, size) for p, size in zip(paths, sizes, strict=True)}
        self.rows = rows

    @classmethod
    def of(cls, table) -> LoggedFiles:
        """The files of the delta-rs ``table``; ``rows`` None when a file has no count."""
        import pyarrow as pa

        actions = pa.table(table.get_add_actions(flatten=True))
        counts = actions.column("num_records") if "num_records" in actions.column_names else None
        rows = None if counts is None or counts.null_count else sum(counts.to_pylist())
        paths, sizes = actions.column("path").to_pylist(), actions.column("size_bytes").to_pylist()
        return cls(table, paths, sizes, rows)

    @property
    def names(self) -> list[str]:
        """The files' names."""
        return list(self.entries)
