"""Seeds into the crawldb: a seed's row, merged with what is known (inject and the API's
submissions)."""

from __future__ import annotations

from functools import partial

from crawldb.merge import merge_inject, new_row
from crawldb.schema import CRAWLDB
from engine.frames import python_df, row_dict, rows_to_df, with_timestamps
from engine.layout import DataDir
from engine.store import crawldb_exists, create_crawldb, merge_rows, read_crawldb
from lib.clock import now_ms
from lib.url.filter import UrlFilter
from lib.url.normalize import host_of


def merge_seeds(spark, conf, data: DataDir, seeds, message: str) -> int:
    """Merge an RDD of ``Seed`` into the crawldb (one Delta commit labelled ``message``);
    returns how many distinct URLs were given."""
    settings = conf.as_dict()
    stamp = now_ms()
    rows = (
        seeds.mapPartitions(partial(seed_rows, settings, stamp))
        .keyBy(lambda row: row["url"])
        .reduceByKey(lambda first, _later: first)
        .values()
    )
    seed_frame = python_df(spark, rows, CRAWLDB).cache()
    if crawldb_exists(spark, data):
        changed = _merged(spark, data, seed_frame, settings["db.injector.update"])
        merge_rows(spark, data, changed, message)
    else:  # the first inject writes the seeds as the crawldb's first version
        create_crawldb(spark, data, with_timestamps(seed_frame, CRAWLDB), message)
    accepted = seed_frame.count()
    seed_frame.unpersist()
    return accepted


def seed_rows(conf, stamp: int, seeds):
    """The new crawldb rows of ``Seed``s, times at ``stamp`` (epoch ms)."""
    normalizer = UrlFilter(conf).normalizer  # once per partition
    for seed in seeds:
        yield new_row(
            seed.url,
            host_of(seed.url),
            stamp,
            score=seed.score if seed.score is not None else conf["db.score.injected"],
            depth=0,
            fetch_interval=seed.fetch_interval or conf["db.fetch.interval.default"],
            fixed_interval=seed.fixed_interval,
            metadata=seed.metadata,
            dedup_key=normalizer.dedup(seed.url),
        )


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

    def merge(pair):
        seed, known = row_dict(pair[0]), row_dict(pair[1])
        merged = merge_inject(known, seed, update)
        return None if merged == known else merged

    rows = joined.rdd.map(merge).filter(lambda r: r is not None)
    return rows_to_df(spark, rows, CRAWLDB)
