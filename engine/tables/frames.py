"""DataFrames and Python rows: epoch milliseconds and timestamps, dicts and Rows,
the page rows of a fetch table, one row printed."""

from __future__ import annotations

import json
import sys

from crawldb.schema import Table
from lib.url.normalize import normalize
from lib.vocabulary import ORIGIN_ROBOTS, ORIGIN_SITEMAP


def python_df(spark, rows, table: Table):
    """A DataFrame of an RDD of dicts with ``table``'s columns, times still in epoch ms."""
    names = table.names
    tuples = rows.map(lambda row: tuple(row.get(name) for name in names))
    return spark.createDataFrame(tuples, table.python_ddl)


def with_timestamps(frame, table: Table):
    """The same DataFrame with ``table``'s epoch-ms columns as TIMESTAMP."""
    from pyspark.sql import functions as F

    for column in table.time_columns:
        frame = frame.withColumn(column, F.timestamp_millis(F.col(column)))
    return frame


def rows_to_df(spark, rows, table: Table):
    """A DataFrame of ``table`` as stored, from an RDD of dicts with times in epoch ms."""
    return with_timestamps(python_df(spark, rows, table), table)


def with_millis(frame, table: Table):
    """The same DataFrame with ``table``'s TIMESTAMP columns as epoch milliseconds."""
    from pyspark.sql import functions as F

    for column in table.time_columns:
        if column in frame.columns:
            frame = frame.withColumn(column, F.unix_millis(F.col(column)))
    return frame


def row_dict(row) -> dict | None:
    """A Spark Row (possibly NULL) of scalar, array and map columns as a plain dict.

    Not ``asDict(recursive=True)``: the rows given here hold no nested struct (maps come
    as dicts already), and its recursion into every value is a merge's largest cost a row."""
    return None if row is None else row.asDict()


def pages(fetched):
    """The rows of a fetch table that are pages (robots.txt and sitemap rows left out;
    soft-404 probes stay, parse needs their fingerprints)."""
    from pyspark.sql import functions as F

    return fetched.where(~F.col("origin").isin(ORIGIN_ROBOTS, ORIGIN_SITEMAP))


def print_record(frame, url: str, job: str, where: str) -> int:
    """Print the row of ``frame`` whose ``url`` is ``url`` (normalized first) as JSON; 1
    with a message naming ``where`` when there is none."""
    key = normalize(url) or url
    rows = frame.where(frame.url == key).collect()
    if not rows:
        print(f"{job}: {key} is not in {where}", file=sys.stderr)
        return 1
    print(json.dumps(rows[0].asDict(recursive=True), default=str, indent=2, sort_keys=True))
    return 0
