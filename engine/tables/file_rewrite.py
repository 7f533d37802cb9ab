"""Upsert into a Delta table keyed on ``url`` by rewriting the files that hold the keys.

Spark's Delta MERGE runs a dozen Spark jobs of its own on every commit (the snapshot's
state, a scan for the files to rewrite, the rewrite, statistics, the commit's checks),
whatever the size of the change: for the crawldb, whose changed rows updatedb and inject
have already computed, that was a third of a round's time outside fetching. Here the
table is read as plain Parquet (``engine.tables.delta_files``), one Spark job finds the
files holding a key (none when every file most likely holds one: ``every_file_held``),
one more writes those files' rows again with the changed and new ones (each task its own
file, ``engine.tables.task_files``), and the driver commits, through delta-rs, the
removal of the old files and the addition of the new ones in one Delta commit: the same
copy-on-write as MERGE's, with the same atomicity (a job killed before the commit leaves
the table as it was; its files are in no version). Only a table whose files hold its
whole rows can be rewritten so; any other (deletion vectors, partition columns) is left
to MERGE.
"""

from __future__ import annotations

import json
import time
import uuid
from functools import partial

from engine.tables import buckets, task_files
from engine.tables.delta_files import LoggedFiles, is_delta_table, plain_files, read_files
from lib.storage import Storage, join

FILE_COLUMN = "_trawl_file"
NEW_COLUMN = "_trawl_new"  # which side of a merge a row is on: the round's (true) or the table's


def upsert_rows(
    spark, path: str, storage: Storage, rows, message: str, given: int | None = None
) -> bool:
    """Replace the rows of ``rows``'s URLs and add the new ones, in one commit labelled
    ``message``; False (and nothing done) when the table must be merged by Spark.
    ``given``: how many rows ``rows`` holds, when the caller knows (``holding_files``)."""
    import pyarrow as pa
    from deltalake import DeltaTable

    table = DeltaTable(path)
    if not plain_files(table):
        return False
    schema = pa.schema(table.schema().to_arrow())
    rows = rows.select(*schema.names)
    logged = LoggedFiles.of(table)
    rewrite(spark, path, storage, logged, rows, ["url"], replaced, schema, message, given)
    return True


def rewrite(spark, path, storage, logged, rows, keys, merge, schema, message, given=None):
    """Merge ``rows`` into the table at ``path`` (its files: ``logged``, a
    ``LoggedFiles``) by ``merge(old, new)`` in one commit labelled ``message``; the
    written files' ``FILE_DDL`` rows. A bucketed
    table (``engine.tables.buckets``) has its buckets' files read by the tasks that merge
    them; any other has the files holding a key found and read by Spark, and is bucketed
    when every file is written again."""
    from pyspark.sql import functions as F

    found = buckets.layout(logged.names)
    sided = rows.withColumn(NEW_COLUMN, F.lit(True))
    size = None if logged.rows is None or given is None else logged.rows + given
    if found and not buckets.resized(found[0], size, bucket_count(spark)):
        count, held = found
        run, files = merged_files(spark, path, storage, sided, keys, merge, schema, count, held)
        touched = [name for file in files for name in held.get(buckets.bucket_of(file["file"]), [])]
    else:
        if found:  # bucketed for another size: every file is written again
            touched, old = logged.names, read_files(spark, logged.table)
        else:
            touched, old = holding_files(spark, logged, rows, keys, given)
        sided = old.withColumn(NEW_COLUMN, F.lit(False)).unionByName(sided)
        whole = len(touched) == len(logged.entries)
        count = buckets.count_for(size, bucket_count(spark)) if whole else None
        run, files = merged_files(spark, path, storage, sided, keys, merge, schema, count, {})
    commit_rewrite(storage, path, logged, touched, (run, files), message)
    return files


def bucket_count(spark) -> int:
    """The most buckets a table written whole has: Spark's shuffle partitions."""
    return int(spark.conf.get("spark.sql.shuffle.partitions"))


def replaced(old, new):
    """The merge of an upsert: ``new``'s rows, and the rows of ``old`` whose URL
    ``new`` has not."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kept = old.filter(pc.invert(pc.is_in(old.column("url"), value_set=new.column("url"))))
    return pa.concat_tables([kept, new.select(old.column_names)])


def holding_files(spark, logged, rows, keys: list[str], given: int | None = None):
    """The names of the files (``logged``, a ``LoggedFiles``) that hold one of the ``keys`` of
    ``rows`` (a DataFrame), and those files' rows (a DataFrame). With ``given`` (how
    many rows ``rows`` holds) and ``every_file_held``, every file, without the scan."""
    from pyspark.sql import functions as F

    names = logged.names
    if given is not None and every_file_held(len(names), given):
        return names, read_files(spark, logged.table)
    current = read_files(spark, logged.table).withColumn(
        FILE_COLUMN, F.element_at(F.split(F.input_file_name(), "/"), -1)
    )
    holding = current.join(rows.select(*keys), keys, "left_semi").select(FILE_COLUMN).distinct()
    touched = [row[0] for row in holding.collect()]
    return touched, current.where(F.col(FILE_COLUMN).isin(touched)).drop(FILE_COLUMN)


def every_file_held(files: int, keys: int) -> bool:
    """Whether a scan for the files holding one of ``keys`` keys would most likely find
    them all: Trawl writes a table's rows to its files by a hash of their key, so a file
    holds none of them with chance (1 - 1/files) ** keys; when fewer than one file of
    the table is expected to be spared, the scan (a few Spark jobs, a read of every
    file's keys) costs more than the rewrite it might save."""
    if not files or not keys:
        return False
    return files * (1 - 1 / files) ** keys < 1


def merge_by_tasks(
    spark, path: str, storage: Storage, rows, keys: list[str], merge, schema, message: str
) -> int:
    """Merge ``rows`` (a DataFrame of the table's rows) into the Delta table at ``path``
    (created when there is none; Arrow ``schema``: its columns as stored) in one commit
    labelled ``message``: the files holding one of their ``keys`` are written again,
    each task applying ``merge(old, new)`` (an Arrow rule over the old and new rows of
    the keys it holds) and writing its own file (``rewrite``). Returns the rows
    ``rows`` gave. ``rows`` may be read twice (counted, then merged): the caller caches it."""
    from pyspark.sql import functions as F

    if is_delta_table(path):
        logged = LoggedFiles.of(plain_table(path))
        given = rows.count()
        files = rewrite(spark, path, storage, logged, rows, keys, merge, schema, message, given)
    else:
        sided = rows.withColumn(NEW_COLUMN, F.lit(True))
        count = buckets.count_for(rows.count(), bucket_count(spark))
        run, files = merged_files(spark, path, storage, sided, keys, merge, schema, count, {})
        create_from_files(storage, path, run, files, schema, message)
    return sum(json.loads(file["figures"])["new"] for file in files)


def merged_files(spark, path, storage: Storage, sided, keys, merge, schema, count, held):
    """Write new files of the table at ``path`` from ``sided`` (old and new rows, told
    by ``NEW_COLUMN``), shuffled by their ``keys``, each task applying ``merge(old,
    new)`` and writing its own file; the run's id and the files' ``FILE_DDL`` rows.
    With ``count``, the tasks are its buckets, each also reading the old rows of its
    bucket's files in ``held`` (bucket -> names), and their files are bucket files."""
    run = uuid.uuid4().hex[:12]
    compression = spark.conf.get("spark.sql.parquet.compression.codec")
    task = partial(_merge_task, storage, path, run, schema, compression, merge, count, held)
    shuffled = buckets.spread(sided, count, keys) if count else sided.repartition(*keys)
    files = [row.asDict() for row in shuffled.mapInArrow(task, task_files.FILE_DDL).collect()]
    if count:
        buckets.check_whole(path, files)
    return run, files


def _merge_task(storage, path, run, schema, compression, merge, count, held, batches):
    """Task side of ``merged_files``: this task's old and new rows merged, to one new
    file of the table, or one a bucket of ``count`` (``buckets.parts``)."""
    import pyarrow as pa
    from pyspark import TaskContext

    found = list(batches)
    if not found:
        return
    rows = pa.Table.from_batches(found)
    context = TaskContext.get()
    index, attempt = context.partitionId(), context.attemptNumber()
    merged = partial(_merged_file, storage, path, schema, compression, merge)
    if not count:
        yield from merged(rows, task_files.task_file(path, run, index, attempt, compression), [])
        return
    for bucket, part in buckets.parts(rows):
        file = buckets.bucket_file(path, run, bucket, count, attempt, compression)
        yield from merged(part, file, held.get(bucket, []))


def _merged_file(storage, path, schema, compression, merge, rows, file, names):
    """``rows`` (old and new, told by ``NEW_COLUMN``) merged with the rows of the
    table's files ``names``, written to ``file``; yields its ``FILE_DDL`` row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    new = rows.column(NEW_COLUMN)
    # In the table's schema, not Spark's, which may call a column of the new rows
    # non-nullable (a literal) that the stored rows hold nulls in.
    rows = conformed(rows.drop_columns([NEW_COLUMN]), schema)
    stored = read_bucket(storage, path, names, schema)
    old = pa.concat_tables([rows.filter(pc.invert(new)), stored])
    state = merge(old, rows.filter(new)).cast(schema)
    bounds = UrlBounds()
    bounds.of(state)
    figures = {**bounds.figures(), "new": pc.sum(new.cast(pa.int64())).as_py() or 0}
    yield from task_files.write_task_file(
        storage, file, state.to_batches(), schema, compression, lambda: figures
    )


def read_bucket(storage: Storage, path: str, names: list[str], schema, stored=None):
    """The rows of the table's files ``names`` (a bucket's) in ``schema``: the columns a
    file written before they were added to the table lacks, as nulls; ``stored``, when
    given, maps the rows as read (e.g. their times to epoch ms) before."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not names:
        return schema.empty_table()
    read = [pq.read_table(pa.BufferReader(storage.read_bytes(join(path, n)))) for n in names]
    rows = pa.concat_tables(read, promote_options="default")
    return conformed(rows if stored is None else stored(rows), schema)


def conformed(rows, schema):
    """The Arrow table ``rows`` in ``schema``: its columns in order and cast, those it
    lacks (added to the table after its file was written) as nulls."""
    import pyarrow as pa

    for field in schema:
        if field.name not in rows.column_names:
            rows = rows.append_column(field.name, pa.nulls(rows.num_rows, field.type))
    return rows.select(schema.names).cast(schema)


def plain_table(path: str):
    """The delta-rs table at ``path``; an error naming it when its files do not hold its
    whole rows (deletion vectors, partition columns), as no table Trawl writes has."""
    from deltalake import DeltaTable

    table = DeltaTable(path)
    if not plain_files(table):
        raise ValueError(
            f"{path}: a Delta table with deletion vectors or partition columns, which"
            " Trawl cannot rewrite; copy its rows into a plain table first"
        )
    return table


def create_with_rows(spark, path: str, storage: Storage, rows, schema, message: str) -> None:
    """Write ``rows`` as the first version of a new table at ``path`` (Arrow ``schema``:
    its columns as stored), in one commit labelled ``message``; fails if one is there."""
    run, files = write_files(spark, path, storage, rows, schema)
    create_from_files(storage, path, run, files, schema, message)


def create_from_files(
    storage: Storage, path: str, run: str, files: list[dict], schema, message: str
) -> None:
    """Commit the ``files`` (``task_files.FILE_DDL`` rows) run ``run`` wrote as the first
    version of a new table at ``path``, then delete the run's files not committed."""
    from deltalake import Schema
    from deltalake.transaction import CommitProperties, create_table_with_add_actions

    kept = [file for file in files if file["rows"]]
    create_table_with_add_actions(
        path,
        Schema.from_arrow(schema),
        add_actions(kept),
        mode="error",
        commit_properties=CommitProperties(custom_metadata={"userMetadata": message}),
    )
    task_files.remove_uncommitted(storage, path, run, {file["file"] for file in kept})


def write_files(spark, path: str, storage: Storage, state, schema) -> tuple[str, list[dict]]:
    """Write ``state``'s rows as the files of a new table, one a bucket of its URLs
    (``engine.tables.buckets``; Arrow ``schema``: the table's): ``merged_files`` with no
    old rows. The run's id and the rows of the files written (``FILE_DDL``)."""
    from pyspark.sql import functions as F

    count = buckets.count_for(state.count(), bucket_count(spark))
    sided = state.withColumn(NEW_COLUMN, F.lit(True))
    return merged_files(spark, path, storage, sided, ["url"], replaced, schema, count, {})


class UrlBounds:
    """The least and greatest URL of the batches it sees: the file's statistics, so
    that a reader looking up URLs skips the files that cannot hold them."""

    def __init__(self):
        self.least: str | None = None
        self.greatest: str | None = None

    def of(self, batch) -> None:
        """Take the batch's bounds into account."""
        import pyarrow.compute as pc

        if batch.num_rows:
            bounds = pc.min_max(batch.column("url"))
            least, greatest = bounds["min"].as_py(), bounds["max"].as_py()
            self.least = least if self.least is None else min(self.least, least)
            self.greatest = greatest if self.greatest is None else max(self.greatest, greatest)

    def figures(self) -> dict:
        """The bounds seen, as a file row's figures."""
        return {"url_min": self.least, "url_max": self.greatest}


def commit_rewrite(storage: Storage, path: str, logged, removed, written, message: str) -> None:
    """Driver side: one Delta commit of the files ``removed`` (names) gone and the files
    ``written`` (``(run, rows)`` of ``write_files``) added, on the version ``logged``
    (``LoggedFiles``) was read at; then delete the run's files that were not committed."""
    from deltalake.transaction import CommitProperties, RemoveAction

    run, files = written
    now = int(time.time() * 1000)
    sizes = logged.entries
    kept = [file for file in files if file["rows"]]
    actions = [RemoveAction(sizes[name][0], True, now, sizes[name][1]) for name in removed]
    actions += add_actions(kept)
    if actions:
        logged.table.create_write_transaction(
            actions,
            mode="append",
            schema=logged.table.schema(),
            commit_properties=CommitProperties(custom_metadata={"userMetadata": message}),
        )
    task_files.remove_uncommitted(storage, path, run, {file["file"] for file in kept})


def add_actions(files: list[dict]) -> list:
    """The Delta add actions of the files written (their ``FILE_DDL`` rows)."""
    from deltalake.transaction import AddAction

    now = int(time.time() * 1000)
    return [AddAction(f["file"], f["bytes"], {}, now, True, _stats(f)) for f in files]


def _stats(file: dict) -> str:
    """An added file's statistics: its rows and the bounds of its URLs."""
    figures = json.loads(file["figures"])
    return json.dumps(
        {
            "numRecords": file["rows"],
            "minValues": {"url": figures["url_min"]},
            "maxValues": {"url": figures["url_max"]},
            "nullCount": {"url": 0},
        }
    )
