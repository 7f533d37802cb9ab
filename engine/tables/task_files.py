"""A Delta table whose Parquet files its Python tasks write themselves (the fetch table).

Through Spark's Delta writer, every row a Python task gives crosses into the JVM as an
Arrow batch, is rebuilt there as a row and encoded again as Parquet: for the fetch
table, every page body, on the cores the fetch tasks need (3-6.5 CPU-s a round of the
benchmark, and the JIT compiling that path). Here each task writes its own file with
pyarrow (``lib.parquet_file``, streamed to the storage, so also to HDFS) and gives back
one row: its file, size and row count. The driver then commits the files of the
successful attempts in one Delta commit through delta-rs (the ``deltalake`` package,
as the API's tables). A failed attempt's file is never committed, and is deleted after.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator

from crawldb.schema import Table
from lib.parquet_file import write_parquet
from lib.storage import Storage, join

# The row each task gives back for each file it wrote: the table it belongs to (its
# name in the segment), and the task's figures of it as a JSON object.
FILE_DDL = "table STRING, file STRING, bytes BIGINT, rows BIGINT, figures STRING"


def stored_schema(table: Table):
    """Arrow schema of ``table`` as stored: TIMESTAMP columns as UTC microseconds."""
    import pyarrow as pa

    from engine.tables.arrow import schemas

    _, schema = schemas(table)  # times as epoch-ms BIGINT, set to timestamps below
    for column in table.time_columns:
        index = schema.get_field_index(column)
        schema = schema.set(index, pa.field(column, pa.timestamp("us", tz="UTC")))
    return schema


def python_schema(stored):
    """The Arrow schema of the same rows as Python makes them (times in epoch ms)."""
    import pyarrow as pa

    for index, field in enumerate(stored):
        if pa.types.is_timestamp(field.type):
            stored = stored.set(index, pa.field(field.name, pa.int64()))
    return stored


def as_stored(batch, schema):
    """A record batch of Python rows (times in epoch ms) in the stored ``schema``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for field, column in zip(schema, batch.columns, strict=True):
        if pa.types.is_timestamp(field.type) and not pa.types.is_timestamp(column.type):
            column = pc.multiply(column, 1000).cast(field.type)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def stored_table(rows: list[dict], schema):
    """Python rows (times in epoch ms) held in the driver, as one Arrow table in the
    stored ``schema``: converted at once, not batch by batch (no body to bound)."""
    import pyarrow as pa

    batch = pa.RecordBatch.from_pylist(rows, schema=python_schema(schema))
    return pa.Table.from_batches([as_stored(batch, schema)], schema)


def stored_of(rows, schema):
    """The Arrow table ``rows`` (times in epoch ms) in the stored ``schema``."""
    import pyarrow as pa

    rows = rows.select(schema.names).cast(python_schema(schema))
    return pa.Table.from_batches([as_stored(b, schema) for b in rows.to_batches()], schema)


def stored_batches(rows: Iterable[dict], schema, size_column: str) -> Iterator:
    """Python rows (times in epoch ms) as record batches in the stored ``schema``, cut
    as ``engine.tables.arrow.record_batches`` cuts them (by rows, or by ``size_column``'s bytes)."""
    from engine.tables.arrow import record_batches

    for batch in record_batches(rows, python_schema(schema), size_column):
        yield as_stored(batch, schema)


def new_run(storage: Storage, *table_paths: str) -> str:
    """Start writing the tables at ``table_paths``: an id for this run's files. A table
    never committed holds only files of a run that was killed: they are removed first."""
    for table_path in table_paths:
        if not storage.exists(join(table_path, "_delta_log")):
            storage.delete(table_path)
    return uuid.uuid4().hex[:12]


def task_file(table_path: str, run: str, index: int, attempt: int, compression: str) -> str:
    """Path of the file one task attempt writes (Spark's ``part-`` naming, plus the run
    and the attempt, so that no two attempts write into one file)."""
    return join(table_path, f"part-{index:05d}-{run}-a{attempt}.{compression}.parquet")


def write_task_file(
    storage: Storage,
    path: str,
    batches: Iterable,
    schema,
    compression: str,
    figures: Callable[[], dict] = dict,
) -> Iterator:
    """Task side: write the batches to ``path``; yield the file's row (``FILE_DDL``),
    with ``figures()`` as they are once the batches are written."""
    rows, size = write_parquet(storage, path, batches, schema, compression)
    yield file_row(path, size, rows, figures())


def write_spark_batches(
    storage: Storage,
    table_path: str,
    run: str,
    schema,
    compression: str,
    batches: Iterable,
    figures: Callable[[], dict] = dict,
    seen: Callable = lambda batch: None,
) -> Iterator:
    """Task side of a ``mapInArrow``: Spark's Arrow ``batches`` (cast to the stored
    ``schema``, ``seen`` shown each) written to this task attempt's file of the table at
    ``table_path``; yields the file's row (``FILE_DDL``) with ``figures()``."""
    from pyspark import TaskContext

    context = TaskContext.get()
    path = task_file(table_path, run, context.partitionId(), context.attemptNumber(), compression)
    stored = spark_as_stored(batches, schema, seen)
    yield from write_task_file(storage, path, stored, schema, compression, figures)


def spark_as_stored(batches: Iterable, schema, seen: Callable = lambda batch: None) -> Iterator:
    """Spark's Arrow ``batches`` cast to the stored ``schema``, ``seen`` shown each."""
    import pyarrow as pa

    for batch in batches:
        seen(batch)
        columns = [batch.column(field.name).cast(field.type) for field in schema]
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


def file_row(path: str, size: int, rows: int, figures: dict):
    """The record batch of one written file's row (``FILE_DDL``): its table is the name
    of the folder it is in."""
    import pyarrow as pa

    table, name = path.rsplit("/", 2)[-2:]
    row = {"table": table, "file": name, "bytes": size, "rows": rows}
    schema = pa.schema(
        [("table", pa.string()), ("file", pa.string()), ("bytes", pa.int64())]
        + [("rows", pa.int64()), ("figures", pa.string())]
    )
    return pa.RecordBatch.from_pylist([{**row, "figures": json.dumps(figures)}], schema=schema)


def commit(storage: Storage, table_path: str, run: str, files: list, schema, message: str) -> None:
    """Driver side: commit the files the successful attempts wrote (``files``: their
    rows) as the whole table, in one commit labelled ``message``; then delete this
    run's other files (those of failed attempts)."""
    from deltalake import Schema
    from deltalake.transaction import AddAction, CommitProperties, create_table_with_add_actions

    now = int(time.time() * 1000)
    kept = [file for file in files if file["rows"]]
    actions = [AddAction(file["file"], file["bytes"], {}, now, True, _stats(file)) for file in kept]
    create_table_with_add_actions(
        table_path,
        Schema.from_arrow(schema),
        actions,
        mode="overwrite",
        commit_properties=CommitProperties(custom_metadata={"userMetadata": message}),
    )
    remove_uncommitted(storage, table_path, run, {file["file"] for file in kept})


def remove_uncommitted(storage: Storage, table_path: str, run: str, committed: set) -> None:
    """Delete the files this run wrote into the table and did not commit (``committed``:
    the names of those it did): failed attempts' files, and empty ones."""
    for name in storage.list_files(table_path):
        if f"-{run}-a" in name and name not in committed:
            storage.delete(join(table_path, name))


def _stats(file: dict) -> str:
    """The add action's statistics: the row count (no column bounds: a segment's fetch
    table has one file per partition, a handful, and is read whole)."""
    return json.dumps({"numRecords": file["rows"]})
