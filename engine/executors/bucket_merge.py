"""updatedb's merge by bucket of a bucketed crawldb (``engine.tables.buckets``).

The rows a segment touched (its fetches and the links kept, by URL) are shuffled to the
crawldb's buckets, and each task reads its bucket's files itself for the old rows of
its URLs, then runs ``crawldb.merge``'s rule (``changed_of_touched``), as the driver does:
the crawldb's rows, all its columns, are neither shuffled nor joined by Spark, nor
converted from the JVM's rows to Arrow. A crawldb that is not bucketed is joined by
Spark (``jobs.updatedb.with_old_rows``).
"""

from __future__ import annotations

from functools import partial

from crawldb.merge import changed_of_touched
from crawldb.schema import CRAWLDB
from engine.tables.driver_tables import as_millis
from engine.tables.file_rewrite import read_bucket
from lib.url.normalize import UrlNormalizer


def merged_by_buckets(touched, layout, conf: dict, segment: str, stamp: int, storage, path):
    """The changed crawldb rows (a DataFrame of the crawldb's Spark schema, times in
    ms) of ``touched`` (url, fetch, links) by ``layout``'s buckets."""
    from engine.tables.arrow import schemas

    spark_schema, arrow_schema = schemas(CRAWLDB)
    count, held = layout
    task = partial(_merge_task, conf, segment, stamp, arrow_schema, storage, path, held)
    return touched.repartition(count, "url").mapInArrow(task, spark_schema)


def _merge_task(conf, segment, stamp, schema, storage, path, held, batches):
    """Task side: this bucket's touched rows, each with its old row (a null struct for
    a URL new to the crawldb), merged; the changed rows out."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark import TaskContext

    found = list(batches)
    if not found:
        return
    touched = pa.Table.from_batches(found)
    names = held.get(TaskContext.get().partitionId(), [])
    old = read_bucket(storage, path, names, schema, partial(as_millis, table=CRAWLDB))
    urls = touched.column("url").combine_chunks()
    at = pc.index_in(urls, value_set=old.column("url").combine_chunks())
    taken = old.take(at).combine_chunks()
    columns = [taken.column(name).combine_chunks() for name in schema.names]
    rows = pa.StructArray.from_arrays(columns, fields=list(schema), mask=pc.is_null(at))
    touched = touched.append_column("old", rows)
    normalizer = UrlNormalizer(conf)
    yield from changed_of_touched(conf, segment, stamp, normalizer, touched, schema).to_batches()
