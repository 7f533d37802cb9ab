"""A table's files by bucket: each file holds the rows of one bucket of its keys.

A row's bucket is ``pmod(hash(keys), n)``, the partition Spark's ``repartition(n, *keys)``
sends it to, so that with a fixed ``n`` each task of it holds one bucket, always the
same rows' keys (``spread``). A task that writes a bucket's rows to a file named after
it (``bucket_file``) leaves a table whose every file says which keys it can hold: a later
merge by the same ``repartition`` sends each task the new rows of one bucket, and the
task reads the bucket's old rows from its files itself. The table is then never read,
joined or shuffled by Spark to find the rows a merge replaces. A table any other writer
touched (a Spark MERGE or DELETE, the driver's rewrite) has files of other names, and
is merged the other way until a rewrite of all its files buckets it again.
"""

from __future__ import annotations

import re

from lib.storage import join

BUCKET_COLUMN = "_trawl_bucket"

_NAME = re.compile(r"bucket-(\d+)-of-(\d+)-")

# Rows a bucket is sized for when a table's files are all written at once: a small
# table is one file, merged by one task (a task a bucket, whatever the bucket holds,
# slowed a small crawl on Spark's path: docs/benchmarks.md); a large one has at most
# Spark's shuffle partitions, the parallelism its user gave.
BUCKET_ROWS = 100_000


def count_for(rows: int | None, most: int) -> int:
    """The buckets of a table of ``rows`` rows written whole (``most`` when unknown)."""
    if rows is None:
        return most
    return max(1, min(most, -(-rows // BUCKET_ROWS)))


def resized(current: int, rows: int | None, most: int) -> bool:
    """Whether a table bucketed ``current`` ways, to hold ``rows`` rows, is better
    written whole again: its size calls for twice or half as many buckets or more (no
    when ``rows`` is unknown)."""
    if rows is None:
        return False
    wanted = count_for(rows, most)
    return wanted >= 2 * current or 2 * wanted <= current


def bucket_file(
    table_path: str, run: str, bucket: int, buckets: int, attempt: int, compression: str
) -> str:
    """Path of the file one task attempt writes for ``bucket`` of ``buckets``."""
    name = f"bucket-{bucket:05d}-of-{buckets:05d}-{run}-a{attempt}.{compression}.parquet"
    return join(table_path, name)


def layout(names: list[str]) -> tuple[int, dict[int, list[str]]] | None:
    """``(buckets, bucket -> its files' names)`` when every file of ``names`` is a
    bucket file of one count of buckets; None otherwise (a table of no file included)."""
    found = [_NAME.match(name) for name in names]
    if not found or not all(found):
        return None
    counts = {int(match.group(2)) for match in found}
    if len(counts) != 1:
        return None
    held: dict[int, list[str]] = {}
    for name, match in zip(names, found, strict=True):
        held.setdefault(int(match.group(1)), []).append(name)
    return counts.pop(), held


def bucket_of(name: str) -> int:
    """The bucket of a bucket file, by its name."""
    match = _NAME.match(name)
    if match is None:
        raise ValueError(f"{name}: not a bucket file")
    return int(match.group(1))


def spread(frame, count: int, keys=("url",)):
    """``frame`` shuffled to ``count`` buckets of its ``keys``, each row with its bucket
    (``BUCKET_COLUMN``). A task holds one bucket, or several whole ones: Spark drops a
    repartition by the keys a join on them has already partitioned by, and adaptive
    execution may then merge the join's small partitions. So a task goes by the column
    (``parts``), never by its partition's index."""
    from pyspark.sql import functions as F

    bucket = F.pmod(F.hash(*keys), F.lit(count))
    return frame.withColumn(BUCKET_COLUMN, bucket).repartition(count, *keys)


def parts(table):
    """A task's rows of ``spread`` (an Arrow table) by bucket: ``(bucket, its rows
    without the column)`` pairs."""
    import pyarrow.compute as pc

    column = table.column(BUCKET_COLUMN)
    rows = table.drop_columns([BUCKET_COLUMN])
    for bucket in sorted(pc.unique(column).to_pylist()):
        yield bucket, rows.filter(pc.equal(column, bucket))


def check_whole(table_path: str, files: list[dict]) -> None:
    """Raise when two of the ``files`` written (``FILE_DDL`` rows) are of one bucket: a
    bucket split over tasks (as adaptive execution may split a skewed partition), each
    file holding part of its rows. Nothing is committed: the table stays as it was."""
    seen: set[int] = set()
    for file in files:
        bucket = bucket_of(file["file"])
        if bucket in seen:
            raise RuntimeError(
                f"{table_path}: bucket {bucket} was written by two tasks; the table is"
                " unchanged (set spark.sql.adaptive.skewJoin.enabled=false and rerun)"
            )
        seen.add(bucket)
