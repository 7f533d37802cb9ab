"""Python tasks that take and give Arrow record batches (``DataFrame.mapInArrow``).

The fetch and parse tasks move page bodies: as pickled rows each body is copied in and
out of Python objects on both sides, and the JVM rebuilds every row from pickles; as
Arrow batches a column crosses as one buffer and pyarrow builds the rows back in C.
A batch is bounded both ways, so that big pages stay few in memory: Spark cuts the
batches it sends at ``BATCH_ROWS`` rows or ``BATCH_BYTES`` (while ``batch_limits`` is
in force), and ``record_batches`` cuts the ones sent back the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial

from crawldb.schema import Table

BATCH_ROWS = 256
BATCH_BYTES = 16 * 1024 * 1024
BATCH_LIMITS = {
    "spark.sql.execution.arrow.maxRecordsPerBatch": str(BATCH_ROWS),
    "spark.sql.execution.arrow.maxBytesPerBatch": str(BATCH_BYTES),
}


def schemas(table: Table):
    """``(Spark schema, Arrow schema)`` of ``table``'s rows as Python gives them (times
    in epoch ms: ``Table.python_ddl``)."""
    return ddl_schemas(table.python_ddl)


def ddl_schemas(ddl: str):
    """``(Spark schema, Arrow schema)`` of rows of a DDL string. On the driver: pyspark
    reads the session's settings to convert (a Python task has no session)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    spark_schema = StructType.fromDDL(ddl)
    return spark_schema, to_arrow_schema(spark_schema)


def rows_of(batches) -> Iterator[dict]:
    """The rows of incoming record batches, as dicts (a MAP column as key-value pairs)."""
    for batch in batches:
        yield from batch.to_pylist()


def record_batches(rows: Iterable[dict], schema, size_column: str) -> Iterator:
    """Dict rows as record batches of ``schema`` (a missing key is NULL), each closed at
    ``BATCH_ROWS`` rows or once its ``size_column`` values reach ``BATCH_BYTES``."""
    import pyarrow as pa

    batch: list[dict] = []
    size = 0
    for row in rows:
        batch.append(row)
        size += len(row.get(size_column) or b"")
        if len(batch) >= BATCH_ROWS or size >= BATCH_BYTES:
            yield pa.RecordBatch.from_pylist(batch, schema=schema)
            batch, size = [], 0
    if batch:
        yield pa.RecordBatch.from_pylist(batch, schema=schema)


def warm_workers(spark, modules: tuple[str, ...]):
    """Start the Python workers of Arrow tasks and import ``modules`` in them, in a
    thread of its own; returns the thread. Spark starts these workers (a daemon of their
    own, then one fork a core) only when the first Arrow task of the session runs, which
    in a crawl is the first fetch: 3 s of start-up (1.5 s for the daemon, 1.7 s of
    imports) before its first request, while the driver was still planning the fetch.
    Started first, they are ready when the fetch tasks come and serve them (Spark keeps a
    worker for the next task); a session whose workers run already spends one tiny job."""
    import threading

    from pyspark.sql.types import StructType

    slots = spark.sparkContext.defaultParallelism
    task = partial(_import_modules, modules)
    frame = spark.range(0, slots, 1, slots).mapInArrow(task, StructType([]))
    thread = threading.Thread(target=frame.collect, name="warm-arrow-workers", daemon=True)
    thread.start()
    return thread


def _import_modules(modules: tuple[str, ...], batches):
    """Arrow task: import the modules, give no rows."""
    import importlib

    for name in modules:
        importlib.import_module(name)
    for _ in batches:
        pass
    yield from ()
