"""parse: parse a segment's fetched pages into its parse table (data flow step 4).

Usage: ``submit.sh parse --data DIR [--segment NAME]`` (default: the oldest segment
fetched but not parsed). Each successful fetch becomes one row: title, visible text,
content hash, SimHash and normalized outlinks (``lib.content.parse.parse_pages``). Fetched
sitemaps go to the segment's ``sitemaps`` table (``lib.content.sitemaps``), one row per entry.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import partial

from crawldb.schema import PARSE, SITEMAPS
from engine.executors.task_parse import finish_parse, parse_batch, sitemap_entries
from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import Segment, add_segment_option, run_on_segment, segment_required
from engine.runtime.progress import PROGRESS_KEY, StageProgress, spark_tasks
from engine.runtime.session import session_conf
from engine.tables import arrow
from engine.tables.delta_commits import delta_commit_message
from engine.tables.delta_files import read_current
from engine.tables.frames import pages, rows_to_df, with_timestamps
from lib import vocabulary as st
from lib.clock import Stopwatch
from lib.content.parse import PageParsers
from lib.export import Exports, documents
from lib.vocabulary import ORIGIN_SITEMAP


def build_parser():
    """Command line of the job."""
    parser = job_parser("parse", __doc__.splitlines()[0])
    add_segment_option(parser)
    return parser


def run(spark, conf, args) -> int:
    """Parse one segment; 1 when there is none to parse."""
    return run_on_segment(args, conf, "parsed", lambda _data, segment: parse(spark, conf, segment))


def parse_arrow(conf: dict, schema, batches) -> Iterator:
    """Spark task (``mapInArrow``, see ``engine.tables.arrow``): fetch rows in, parse-table rows
    out, a record batch at a time (a batch shares one vectorised SimHash pass)."""
    import pyarrow as pa

    parsers, exports = PageParsers(conf), Exports(conf)  # the task's plugins, made once
    for batch in batches:
        rows = batch.to_pylist()
        parsed = parse_batch(conf, rows, parsers)
        exports.export(documents(rows, parsed))
        yield pa.RecordBatch.from_pylist(parsed, schema=schema)
    exports.close()


def parse_sitemaps(spark, conf, segment: Segment) -> int:
    """Write the segment's sitemap entries to its ``sitemaps`` table; how many."""
    from pyspark.sql import functions as F

    if not segment.summary("fetched").get("sitemaps"):
        return 0
    fetched = read_current(spark, segment.table("fetch"))
    sitemaps = fetched.where(
        (F.col("origin") == ORIGIN_SITEMAP) & (F.col("fetch_status") == st.SUCCESS)
    ).select("url", "content")
    rows = sitemaps.rdd.mapPartitions(partial(sitemap_entries, conf.as_dict()))
    with delta_commit_message(spark, f"trawl parse sitemaps segment={segment.name}"):
        rows_to_df(spark, rows, SITEMAPS).write.format("delta").mode("overwrite").save(
            segment.table("sitemaps")
        )
    return read_current(spark, segment.table("sitemaps")).count()


def parse(spark, conf, segment: Segment) -> dict:
    """Parse the segment's successful fetches into its parse table."""
    from pyspark.sql import functions as F

    clock = Stopwatch()
    fetched = pages(read_current(spark, segment.table("fetch")))
    ok = fetched.where(F.col("fetch_status") == st.SUCCESS).select(
        "url", "content", "content_type", "headers"
    )
    spark_schema, arrow_schema = arrow.schemas(PARSE)
    task = partial(parse_arrow, conf.as_dict(), arrow_schema)
    parsed = with_timestamps(ok.mapInArrow(task, spark_schema), PARSE)
    watch = StageProgress("parse", "tasks", spark_tasks(spark), conf[PROGRESS_KEY])
    with (
        delta_commit_message(spark, f"trawl parse segment={segment.name}"),
        session_conf(spark, arrow.BATCH_LIMITS),
        watch,
    ):
        parsed.write.format("delta").mode("overwrite").save(segment.table("parse"))
    table = read_current(spark, segment.table("parse"))
    figures = table.agg(
        F.count("*").alias("pages"),
        F.sum(F.when(F.col("parse_status") == "success", 1).otherwise(0)).alias("html"),
        F.sum(F.when(F.col("parse_status") == "failed", 1).otherwise(0)).alias("failed"),
        F.coalesce(F.sum(F.size("outlinks")), F.lit(0)).alias("outlinks"),
    ).collect()[0]
    summary = {key: int(figures[key] or 0) for key in ("pages", "html", "failed", "outlinks")}
    summary["sitemap_urls"] = parse_sitemaps(spark, conf, segment)
    summary["seconds"] = round(clock.seconds, 1)
    finish_parse(spark, segment, summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("parse", build_parser(), run, argv, segment_required)


if __name__ == "__main__":
    sys.exit(main())
