"""fetch: fetch a segment's fetch list, politely, partition by partition (data flow step 3).

Usage: ``submit.sh fetch --data DIR [--segment NAME]`` (default: the oldest segment
generated but not fetched). Each Spark task fetches one host-partitioned slice with
``lib.fetcher.PartitionFetcher`` and writes one WARC file; results go to the segment's
``fetch`` table. With ``fetcher.parse`` the parse stage runs right after, in this job.
"""

from __future__ import annotations

import sys
from functools import partial

from crawldb import status as st
from crawldb.schema import FETCH
from jobs.common import (
    Stopwatch,
    delta_commit_message,
    job_main,
    job_parser,
    progress,
    rows_to_df,
)
from jobs.generate import fetch_partitions
from jobs.layout import Segment, add_segment_option, run_on_segment
from lib.fetcher import PartitionFetcher
from lib.http import user_agent
from lib.warc import WarcFile


def build_parser():
    """Command line of the job."""
    parser = job_parser("fetch", __doc__.splitlines()[0])
    add_segment_option(parser)
    return parser


def run(spark, conf, args) -> int:
    """Fetch one segment; 1 when there is none to fetch."""

    def work(_data, segment):
        fetch(spark, conf, segment)
        if conf["fetcher.parse"]:
            from jobs.parse import parse

            parse(spark, conf, segment)

    return run_on_segment(args, "fetched", work)


def fetch(spark, conf, segment: Segment) -> dict:
    """Fetch the segment's fetch list into its fetch table and WARC files."""
    clock = Stopwatch()
    fetchlist = spark.read.format("delta").load(segment.table("fetchlist"))
    task = partial(fetch_partition, conf.as_dict(), segment.warc_dir, segment.name)
    rows = fetchlist.repartition(fetch_partitions(spark, conf), "host").rdd
    results = rows_to_df(spark, rows.mapPartitionsWithIndex(task), FETCH)
    with delta_commit_message(spark, f"trawl fetch segment={segment.name}"):
        results.write.format("delta").mode("overwrite").save(segment.table("fetch"))
    summary = fetch_summary(spark, segment, clock.seconds)
    segment.mark("fetched", summary)
    progress(
        "fetch",
        [
            ("urls", summary["urls"]),
            ("pages", summary["pages"]),
            ("errors", summary["errors"]),
            ("bytes", summary["bytes"]),
            ("pages/s", summary["pages_per_second"]),
            ("s", summary["seconds"]),
        ],
    )
    return summary


def fetch_partition(conf: dict, warc_dir: str, segment: str, index: int, rows):
    """Spark task: fetch one partition, write its WARC file, yield result rows."""
    items = [row.asDict() for row in rows]
    if not items:
        return
    warc = WarcFile(f"{warc_dir}/trawl-{segment}-{index:05d}.warc.gz", _warcinfo(conf, segment))
    try:
        yield from PartitionFetcher(conf, warc).run(items)
    except BaseException:
        warc.abort()
        raise
    warc.close()


def _warcinfo(conf: dict, segment: str) -> dict[str, str]:
    return {
        "software": f"Trawl/{conf['http.agent.version']}",
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        "isPartOf": segment,
        "http-header-user-agent": user_agent(conf),
        "robots": "classic",
    }


def fetch_summary(spark, segment: Segment, seconds: float) -> dict:
    """Figures of a fetched segment, computed from the written table."""
    from pyspark.sql import functions as F

    table = spark.read.format("delta").load(segment.table("fetch"))
    figures = table.agg(
        F.count("*").alias("urls"),
        F.sum(F.when(F.col("fetch_status") == st.SUCCESS, 1).otherwise(0)).alias("pages"),
        F.sum(F.when(F.col("fetch_status").isin(st.RETRY, st.NOT_FOUND), 1).otherwise(0)).alias(
            "errors"
        ),
        F.coalesce(F.sum("content_length"), F.lit(0)).alias("bytes"),
    ).collect()[0]
    summary = {key: int(figures[key] or 0) for key in ("urls", "pages", "errors", "bytes")}
    summary["seconds"] = round(seconds, 1)
    summary["pages_per_second"] = round(summary["pages"] / seconds, 2) if seconds else 0.0
    return summary


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("fetch", build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
