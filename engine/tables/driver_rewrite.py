"""The crawldb's files held in the driver, and rewritten by it: updatedb in the driver
(``engine.executors.driver_update``) reads the crawldb's current files through delta-rs, and
writes the files holding a changed URL again, with the changed and new rows, as one new
file committed in place of them in one Delta commit (``engine.tables.file_rewrite``'s commit,
on the version read: a commit in between fails it rather than being lost).
"""

from __future__ import annotations

import json
import uuid

from crawldb.schema import CRAWLDB
from engine.runtime.layout import DataDir
from engine.tables import task_files
from engine.tables.delta_files import LoggedFiles, is_delta_table
from engine.tables.driver_tables import as_millis
from engine.tables.file_rewrite import commit_rewrite, create_from_files, plain_table
from lib.parquet_file import write_parquet
from lib.storage import Storage, basename

FRESHNESS_COLUMNS = ["status", "fetch_time", "fetch_interval", "last_fetch_time"]
STATE_SLICE = 50_000  # rows made Python tuples at once for the freshness figures


def create_crawldb(spark, data: DataDir, rows: list[dict], message: str) -> None:
    """Write ``rows`` (full crawldb rows, times in ms) as the first version of a new
    crawldb, one file in one commit labelled ``message``; fails if one is there."""
    schema = task_files.stored_schema(CRAWLDB)
    state = task_files.stored_table(rows, schema).sort_by("url")
    create_with_state(spark, data.storage, data.crawldb, state, schema, message)


def create_with_state(spark, storage: Storage, path: str, state, schema, message: str) -> None:
    """Write the Arrow table ``state`` (``schema``: the table's columns as stored) as
    the first version of a new table at ``path``, one file in one commit labelled
    ``message``; fails if one is there."""
    run, files = write_state(spark, storage, path, state, schema)
    create_from_files(storage, path, run, files, schema, message)


def merge_in_driver(
    spark, storage: Storage, path: str, rows, keys: list[str], merge, message: str
) -> None:
    """Merge the Arrow table ``rows`` into the Delta table at ``path`` (created when
    there is none) in one commit labelled ``message``, as ``file_rewrite.merge_by_tasks``
    does by Spark's tasks: the files holding one of their ``keys`` read, ``merge(old,
    new)`` (an Arrow rule) of their rows and ``rows`` written as one file in their place."""
    import pyarrow as pa

    if not is_delta_table(path):
        schema = rows.schema
        create_with_state(spark, storage, path, merge(schema.empty_table(), rows), schema, message)
        return
    table = plain_table(path)
    schema = pa.schema(table.schema().to_arrow())
    dataset = table.to_pyarrow_dataset()
    files = [
        (basename(fragment.path), fragment.to_table(schema=dataset.schema).cast(schema))
        for fragment in dataset.get_fragments()
    ]
    rewrite_holding(spark, storage, path, table, files, rows, keys, merge, message)


def rewrite_holding(spark, storage: Storage, path: str, table, files, rows, keys, merge, message):
    """The table's ``files`` (``(name, rows as stored)`` pairs of the delta-rs ``table``
    at ``path``) that hold one of the ``keys`` of ``rows`` written again as one file of
    ``merge(their rows, rows)``, committed in their place in one commit labelled
    ``message``."""
    import pyarrow as pa

    schema = pa.schema(table.schema().to_arrow())
    wanted = rows.select(keys)
    touched, old = [], []
    for name, stored in files:
        if stored.select(keys).join(wanted, keys, join_type="left semi").num_rows:
            touched.append(name)
            old.append(stored)
    state = merge(pa.concat_tables(old) if old else schema.empty_table(), rows).cast(schema)
    written = write_state(spark, storage, path, state, schema)
    commit_rewrite(storage, path, LoggedFiles.of(table), touched, written, message)


def write_state(spark, storage: Storage, path: str, state, schema) -> tuple[str, list[dict]]:
    """``state`` written as one new file of the table at ``path``: the run's id and the
    file's row (``task_files.FILE_DDL``, with the bounds of its URLs as figures)."""
    import pyarrow.compute as pc

    run = uuid.uuid4().hex[:12]
    compression = spark.conf.get("spark.sql.parquet.compression.codec")
    file = task_files.task_file(path, run, 0, 0, compression)
    batches = state.to_batches()
    rows, size = write_parquet(storage, file, batches, schema, compression)
    bounds = pc.min_max(state.column("url"))
    figures = {"url_min": bounds["min"].as_py(), "url_max": bounds["max"].as_py()}
    written = {"file": basename(file), "bytes": size, "rows": rows}
    return run, [written | {"figures": json.dumps(figures)}]


class CrawldbFiles:
    """The crawldb's current version: its files (``names``, and their rows as stored),
    and all its rows as one Arrow table with times in epoch ms (``rows``)."""

    def __init__(self, data: DataDir):
        import pyarrow as pa
        from deltalake import DeltaTable

        self.data = data
        self.delta = DeltaTable(data.crawldb)
        self.schema = pa.schema(self.delta.schema().to_arrow())
        dataset = self.delta.to_pyarrow_dataset()
        fragments = list(dataset.get_fragments())
        self.names = [basename(fragment.path) for fragment in fragments]
        self.stored = [f.to_table(schema=dataset.schema).cast(self.schema) for f in fragments]
        rows = pa.concat_tables(self.stored) if self.stored else self.schema.empty_table()
        self.rows = as_millis(rows, CRAWLDB)

    def rewrite(self, spark, changed, message: str) -> None:
        """Replace the rows of the ``changed`` rows' URLs and add the new ones (full
        crawldb rows, an Arrow table, times in ms), in one commit labelled ``message``."""
        files = zip(self.names, self.stored, strict=True)
        rows = task_files.stored_of(changed, self.schema)
        data = self.data
        rewrite_holding(
            spark, data.storage, data.crawldb, self.delta, files, rows, ["url"], replaced, message
        )

    def state_rows(self, changed):
        """(status, fetch_time, fetch_interval, last_fetch_time) of every row of the
        crawldb once ``changed`` (an Arrow table) replaces its rows
        (``engine.executors.freshness.freshness_of``'s)."""
        import pyarrow.compute as pc

        urls = changed.column("url").combine_chunks()
        kept = self.rows.filter(pc.invert(pc.is_in(self.rows.column("url"), value_set=urls)))
        for rows in (kept, changed):
            for start in range(0, rows.num_rows, STATE_SLICE):
                part = rows.slice(start, STATE_SLICE)
                columns = [part.column(name).to_pylist() for name in FRESHNESS_COLUMNS]
                yield from zip(*columns, strict=True)


def replaced(old, new):
    """The crawldb rows ``old`` with the rows of ``new``'s URLs replaced by ``new``'s and
    the other rows of ``new`` added, sorted by URL (the file's URL bounds stay narrow)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kept = old.filter(
        pc.invert(pc.is_in(old.column("url"), value_set=new.column("url").combine_chunks()))
    )
    return pa.concat_tables([kept, new]).sort_by("url")
