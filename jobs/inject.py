"""inject: merge the URLs of a seed file into the crawldb as unfetched (data flow step 1).

Usage: ``submit.sh inject --seeds FILE --data DIR``. Malformed lines are reported with
their line number and skipped; a URL already in the crawldb keeps its history.
"""

from __future__ import annotations

import sys
from functools import partial

from crawldb.merge import merge_inject, new_row
from crawldb.schema import CRAWLDB
from jobs.common import (
    Stopwatch,
    job_main,
    job_parser,
    now_ms,
    progress,
    python_df,
    row_dict,
    rows_to_df,
    with_timestamps,
)
from jobs.layout import DataDir
from jobs.metrics import record
from jobs.store import crawldb_exists, create_crawldb, merge_rows, read_crawldb
from lib.seeds import Seed, SeedError, parse_seed_line
from lib.urlfilter import UrlFilter
from lib.urls import host_of

ERRORS_SHOWN = 20


def build_parser():
    """Command line of the job."""
    parser = job_parser("inject", __doc__.splitlines()[0])
    parser.add_argument("--seeds", required=True, help="seed file (local or Hadoop path)")
    return parser


def run(spark, conf, args) -> int:
    """Inject the seed file; returns 0, or 1 when no line could be used."""
    data = DataDir.at(args.data, conf)
    return inject(spark, conf, data, args.seeds)


def inject(spark, conf, data: DataDir, seeds_path: str) -> int:
    """Parse, normalize and merge seeds into the crawldb of ``data``."""
    clock = Stopwatch()
    settings = conf.as_dict()
    lines = spark.sparkContext.textFile(str(seeds_path)).zipWithIndex()
    parsed = lines.mapPartitions(partial(_parse, settings)).filter(lambda r: r is not None)
    parsed.cache()
    errors = parsed.filter(lambda r: isinstance(r, SeedError))
    error_count = errors.count()
    for error in errors.take(ERRORS_SHOWN):
        print(f"inject: {seeds_path}: {error}; line skipped", file=sys.stderr)
    if error_count > ERRORS_SHOWN:
        print(f"inject: ... {error_count - ERRORS_SHOWN} more malformed lines", file=sys.stderr)
    accepted = merge_seeds(
        spark, conf, data, parsed.filter(lambda r: isinstance(r, Seed)), "trawl inject"
    )
    parsed.unpersist()
    progress("inject", [("urls", accepted), ("malformed lines", error_count)])
    summary = {"urls": accepted, "malformed_lines": error_count, "seconds": clock.seconds}
    record(spark, data.root, "inject", None, summary)
    return 0 if accepted or not error_count else 1


def _parse(conf, pairs):
    url_filter = UrlFilter(conf)  # once per partition
    for text, index in pairs:
        yield parse_seed_line(index + 1, text, url_filter)


def merge_seeds(spark, conf, data: DataDir, seeds, message: str) -> int:
    """Merge an RDD of ``Seed`` into the crawldb (one Delta commit labelled ``message``);
    returns how many distinct URLs were given."""
    settings = conf.as_dict()
    stamp = now_ms()
    rows = (
        seeds.mapPartitions(partial(_seed_rows, settings, stamp))
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


def _seed_rows(conf, stamp: int, seeds):
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


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("inject", build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
