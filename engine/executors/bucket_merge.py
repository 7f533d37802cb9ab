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
from engine.tables import buckets
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
    return buckets.spread(touched, count).mapInArrow(task, spark_schema)


def _merge_task(conf, segment, stamp, schema, storage, path, held, batches):
    """Task side: this task's touched rows, by bucket (``buckets.parts``), each with its
    old row read from the bucket's files (a null struct for a URL new to the crawldb),
    merged; the changed rows out."""
    import pyarrow as pa

    found = list(batches)
    if not found:
        return
    normalizer = UrlNormalizer(conf)
    for bucket, touched in buckets.parts(pa.Table.from_batches(found)):
        names = held.get(bucket, [])
        old = read_bucket(storage, path, names, schema, partial(as_millis, table=CRAWLDB))
        touched = touched.append_column("old", old_of(touched, old, schema))
        changed = changed_of_touched(conf, segment, stamp, normalizer, touched, schema)
        yield from changed.to_batches()


def old_of(touched, old, schema):
    """Each touched URL's row of ``old`` as a struct of ``schema``, null where it has none."""
    import pyarrow as pa
    import pyarrow.compute as pc

    urls = touched.column("url").combine_chunks()
    at = pc.index_in(urls, value_set=old.column("url").combine_chunks())
    taken = old.take(at).combine_chunks()
    columns = [taken.column(name).combine_chunks() for name in schema.names]
    return pa.StructArray.from_arrays(columns, fields=list(schema), mask=pc.is_null(at))
