"""generate: select due URLs into a new segment's fetch list (data flow step 2).

Usage: ``submit.sh generate --data DIR [--adddays N]``. A URL is due when its
``fetch_time`` is at or before now (plus ``--adddays``) and its score is at least
``generate.min.score``. Best scores go first: at most ``generate.max.count`` per host and
``generate.topN`` in all. The fetch list is partitioned by host, so that all URLs of one
host are in one partition and no two fetch tasks ever talk to the same host.
Exit code 1 when nothing is due (as Nutch's Generator), with no segment written.
"""

from __future__ import annotations

import sys

from crawldb import status as st
from crawldb.schedule import shifted_now
from crawldb.schema import FETCHLIST
from jobs.common import delta_commit_message, job_main, job_parser, now_ms, progress
from jobs.layout import DataDir
from jobs.store import read_crawldb


def build_parser():
    """Command line of the job."""
    parser = job_parser("generate", __doc__.splitlines()[0])
    parser.add_argument(
        "--adddays", type=float, default=0.0, help="pretend the clock is N days ahead"
    )
    return parser


def run(spark, conf, args) -> int:
    """Generate one segment; 0 when written, 1 when nothing was due."""
    return 0 if generate(spark, conf, DataDir.at(args.data), args.adddays) else 1


def fetch_partitions(spark, conf) -> int:
    """How many fetch partitions a fetch list has (``fetcher.partitions``)."""
    configured = conf["fetcher.partitions"]
    return configured if configured > 0 else spark.sparkContext.defaultParallelism


def select_due(crawldb, conf, now: int):
    """The fetch list rows: due, above the minimum score, capped per host and in all."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    due = crawldb.where(
        (F.unix_millis("fetch_time") <= F.lit(now))
        & (F.col("score") >= F.lit(conf["generate.min.score"]))
    )
    best_first = [F.col("score").desc(), F.col("depth").asc(), F.col("url").asc()]
    # One URL per dedup key (lib.urls.UrlNormalizer): variants of a page are not all
    # fetched; the one that answered with content is preferred over a redirect.
    redirect_last = F.col("status").isin(st.REDIR_PERM, st.REDIR_TEMP).cast("int")
    variant = Window.partitionBy(F.coalesce("dedup_key", "url")).orderBy(redirect_last, *best_first)
    due = due.withColumn("_variant", F.row_number().over(variant))
    due = due.where(F.col("_variant") == 1).drop("_variant")
    per_host = conf["generate.max.count"]
    if per_host >= 0:
        rank = F.row_number().over(Window.partitionBy("host").orderBy(*best_first))
        due = due.withColumn("_rank", rank).where(F.col("_rank") <= per_host).drop("_rank")
    top_n = conf["generate.topN"]
    if top_n >= 0:
        due = due.orderBy(*best_first).limit(top_n)
    return due.select(*FETCHLIST.names)


def generate(spark, conf, data: DataDir, add_days: float = 0.0) -> str | None:
    """Write a new segment's fetch list; returns its name, or None when nothing is due."""
    from pyspark.sql import functions as F

    now = shifted_now(now_ms(), add_days)
    crawldb = read_crawldb(spark, data)
    selected = select_due(crawldb, conf, now).cache()
    figures = selected.agg(F.count("*").alias("urls"), F.countDistinct("host").alias("hosts"))
    count, hosts = figures.collect()[0]
    if count == 0:
        selected.unpersist()
        progress("generate", [("urls due", 0)])
        return None
    name = data.new_segment_name()
    segment = data.segment(name)
    partitions = fetch_partitions(spark, conf)
    with delta_commit_message(spark, f"trawl generate segment={name}"):
        selected.repartition(partitions, "host").write.format("delta").save(
            segment.table("fetchlist")
        )
    selected.unpersist()
    segment.mark("generated", {"urls": count, "hosts": hosts, "partitions": partitions})
    progress("generate", [("urls", count), ("hosts", hosts), ("segment", name)])
    return name


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("generate", build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
