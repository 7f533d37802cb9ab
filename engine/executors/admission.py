"""updatedb's admission (``crawldb.admission``, the one rule) run by Spark on a large
crawldb: the round's links and the crawldb's (url, dedup_key, host) rows are cut into
buckets by a hash of their host without ``www.`` (``crawldb.selection.variant_host``),
so that a bucket holds whole hosts with their dedup variants (a dedup key, a host and its
patterns decide within one), and each bucket's two sides are decided by one Python call
(``cogroup(...).applyInArrow``). The driver runs the same rule on the whole round.
"""

from __future__ import annotations

import zlib
from functools import partial

from crawldb import admission
from crawldb.selection import by_host, variant_host

BUCKET_DDL = "url STRING, dedup_key STRING, host STRING, bucket INT"


def admit(links, crawldb, conf: dict, links_ddl: str):
    """``links`` (a DataFrame of ``links_ddl``) with a ``reason`` column: null for the
    links kept, else why each is refused; ``crawldb``: a DataFrame of its rows."""
    spark = links.sparkSession
    buckets = int(spark.conf.get("spark.sql.shuffle.partitions"))
    keyed = links.mapInArrow(partial(_bucketed, buckets), f"{links_ddl}, bucket INT")
    rows = crawldb.select("url", "dedup_key", "host")
    known = rows.mapInArrow(partial(_bucketed, buckets), BUCKET_DDL)
    decide = partial(_decide_bucket, conf)
    grouped = keyed.groupBy("bucket").cogroup(known.groupBy("bucket"))
    return grouped.applyInArrow(decide, f"{links_ddl}, reason STRING")


def bucket_of(host: str | None, buckets: int) -> int:
    """The bucket of a host: a stable hash of its ``variant_host``."""
    if host is None:
        return 0
    return zlib.crc32(variant_host(host).encode()) % buckets


def _bucketed(buckets: int, batches):
    import pyarrow as pa

    for batch in batches:
        column = by_host(batch.column("host"), lambda host: bucket_of(host, buckets), "int32")
        yield batch.append_column("bucket", pa.array(column, pa.int32()))


def _decide_bucket(conf: dict, links, known):
    return admission.admit(links.drop_columns(["bucket"]), known, conf)
