"""Seeds into the crawldb (inject, and the crawl-job API's submissions): the rule of
``crawldb.injection`` run where the crawldb is. In the driver for a local seed file and
a crawldb the driver takes (``db.driver.urls``): the lines read and merged in Python,
the crawldb's first version, or the files holding a re-injected URL, written by the
driver (``engine.tables.driver_rewrite``). Else by Spark's tasks: the lines parsed per
partition, the first line of each URL kept by a reduce, the seeds merged with the
crawldb's rows joined to them, the changed rows written in one commit.
"""

from __future__ import annotations

import os
import re
from functools import partial

from crawldb.injection import changed_row, earlier, is_error, is_seed, parsed_lines, seed_rows
from crawldb.schema import CRAWLDB
from engine.executors import driver_update
from engine.runtime.layout import DataDir
from engine.tables import arrow
from engine.tables.delta_files import is_delta_table
from engine.tables.driver_rewrite import CrawldbFiles
from engine.tables.driver_rewrite import create_crawldb as create_in_driver
from engine.tables.driver_tables import rows_by_url
from engine.tables.frames import python_df, row_dict, rows_to_df, with_timestamps
from engine.tables.store import crawldb_exists, create_crawldb, merge_rows, read_crawldb
from lib.clock import now_ms

# The bytes of a seed line the driver expects at most, on average, so that a seed file
# of up to db.driver.urls lines is injected in the driver. Unit: bytes.
LINE_BYTES = 256
LINE_END = re.compile(r"\r\n|\r|\n")  # as Hadoop's line reader ends lines


def in_driver(conf: dict, data: DataDir, seeds_path: str) -> bool:
    """Whether the seeds are injected in the driver: a local seed file of up to
    ``db.driver.urls`` lines' worth of bytes, and no crawldb yet or one the driver
    updates (``engine.executors.driver_update.crawldb_in_driver``)."""
    limit = conf["db.driver.urls"]
    remote = "://" in str(seeds_path) and not str(seeds_path).startswith("file:")
    if limit <= 0 or remote:
        return False
    path = str(seeds_path).removeprefix("file://")
    if not os.path.isfile(path) or os.path.getsize(path) > limit * LINE_BYTES:
        return False
    return not is_delta_table(data.crawldb) or driver_update.crawldb_in_driver(conf, data)


def inject_in_driver(spark, conf: dict, data: DataDir, seeds_path: str, message: str):
    """The seed file merged into the crawldb in one commit labelled ``message``:
    ``(distinct URLs given, the malformed lines' SeedErrors in file order)``."""
    with open(str(seeds_path).removeprefix("file://"), "rb") as file:
        text = file.read().decode("utf-8", errors="replace")
    lines = LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # the end of the last line
    parsed = list(parsed_lines(conf, enumerate(lines, 1)))
    rows = {}
    for row in seed_rows(conf, now_ms(), filter(is_seed, parsed)):
        url = row["url"]
        rows[url] = earlier(rows[url], row) if url in rows else row
    errors = list(filter(is_error, parsed))
    if not rows:  # nothing to write: no empty crawldb made either
        return 0, errors
    if not is_delta_table(data.crawldb):
        create_in_driver(
            spark, data, [changed_row(None, row, False) for row in rows.values()], message
        )
        return len(rows), errors
    files = CrawldbFiles(data)
    known = rows_by_url(files.rows, rows)
    update = conf["db.injector.update"]
    changed = [
        row for url, seed in rows.items() if (row := changed_row(known.get(url), seed, update))
    ]
    if changed:
        import pyarrow as pa

        _, schema = arrow.schemas(CRAWLDB)
        files.rewrite(spark, pa.Table.from_pylist(changed, schema=schema), message)
    return len(rows), errors


def parse_by_spark(spark, conf: dict, seeds_path: str):
    """The seed file's lines parsed by Spark's tasks: an RDD of ``Seed`` and
    ``SeedError`` (``crawldb.injection.parsed_lines``)."""
    lines = spark.sparkContext.textFile(str(seeds_path)).zipWithIndex()
    numbered = lines.map(lambda pair: (pair[1] + 1, pair[0]))
    return numbered.mapPartitions(partial(parsed_lines, conf))


def merge_seeds(spark, conf, data: DataDir, seeds, message: str) -> int:
    """Merge an RDD of ``Seed`` into the crawldb (one Delta commit labelled ``message``)
    by Spark's tasks; returns how many distinct URLs were given."""
    settings = conf.as_dict()
    rows = (
        seeds.mapPartitions(partial(seed_rows, settings, now_ms()))
        .keyBy(lambda row: row["url"])
        .reduceByKey(earlier)
        .values()
    )
    seed_frame = python_df(spark, rows, CRAWLDB).cache()
    accepted = seed_frame.count()
    # No seed: nothing to write, and no empty crawldb made either.
    if accepted and crawldb_exists(spark, data):
        changed = _merged(spark, data, seed_frame, settings["db.injector.update"])
        merge_rows(spark, data, changed, message)
    elif accepted:  # the first inject writes the seeds as the crawldb's first version
        create_crawldb(spark, data, with_timestamps(seed_frame, CRAWLDB), message)
    seed_frame.unpersist()
    return accepted


def _merged(spark, data: DataDir, seed_frame, update: bool):
    """Seed rows merged with the rows already known, only where something changes."""
    from pyspark.sql import functions as F

    old = read_crawldb(spark, data, millis=True)
    joined = (
        seed_frame.alias("s")
        .join(old.alias("o"), "url", "left")
        .select(
            F.struct("s.*").alias("seed"),
            F.when(F.col("o.url").isNotNull(), F.struct("o.*")).alias("known"),
        )
    )
    rows = joined.rdd.map(lambda pair: changed_row(row_dict(pair[1]), row_dict(pair[0]), update))
    return rows_to_df(spark, rows.filter(lambda row: row is not None), CRAWLDB)
