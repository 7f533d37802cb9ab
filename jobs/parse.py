"""parse: parse a segment's fetched pages into its parse table (data flow step 4).

Usage: ``submit.sh parse --data DIR [--segment NAME]`` (default: the oldest segment
fetched but not parsed). Each successful fetch becomes one row: title, visible text,
content hash, SimHash and normalized outlinks (``lib.parse.parse_pages``). Fetched
sitemaps go to the segment's ``sitemaps`` table (``lib.sitemaps``), one row per entry.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import partial

from crawldb import status as st
from crawldb.schema import PARSE, SITEMAPS
from jobs import arrow
from jobs.common import (
    Stopwatch,
    delta_commit_message,
    job_main,
    job_parser,
    progress,
    rows_to_df,
    session_conf,
    with_timestamps,
)
from jobs.fetch import pages
from jobs.layout import Segment, add_segment_option, run_on_segment
from jobs.metrics import record
from jobs.progress import PROGRESS_KEY, StageProgress, spark_tasks
from lib.fetcher import ORIGIN_SITEMAP
from lib.parse import parse_pages
from lib.sitemaps import parse_sitemap
from lib.urlfilter import UrlFilter, clean


def build_parser():
    """Command line of the job."""
    parser = job_parser("parse", __doc__.splitlines()[0])
    add_segment_option(parser)
    return parser


def run(spark, conf, args) -> int:
    """Parse one segment; 1 when there is none to parse."""
    return run_on_segment(args, conf, "parsed", lambda _data, segment: parse(spark, conf, segment))


def parse_arrow(conf: dict, schema, batches) -> Iterator:
    """Spark task (``mapInArrow``, see ``jobs.arrow``): fetch rows in, parse-table rows
    out, a record batch at a time (a batch shares one vectorised SimHash pass)."""
    import pyarrow as pa

    for batch in batches:
        yield pa.RecordBatch.from_pylist(parse_batch(conf, batch.to_pylist()), schema=schema)


def parse_batch(conf: dict, rows: list) -> list[dict]:
    """Parse fetch-result rows (dicts from Arrow: ``headers`` as key-value pairs) into
    parse-table rows."""
    pages = [
        (row["url"], row["content"] or b"", row["content_type"], _headers(row["headers"]))
        for row in rows
    ]
    return [
        parse_table_row(row["url"], result)
        for row, result in zip(rows, parse_pages(pages, conf), strict=True)
    ]


def _headers(pairs) -> dict | None:
    return None if pairs is None else dict(pairs)


def parse_table_row(url: str, result) -> dict:
    """A ParseResult as a row of the parse table."""
    return {
        "url": url,
        "parse_status": result.status,
        "reason": result.reason,
        "title": result.title,
        "description": result.description,
        "language": result.language,
        "canonical": result.canonical,
        "feeds": result.feeds,
        "encoding": result.encoding,
        "encoding_source": result.encoding_source,
        "text": result.text,
        "content_hash": result.content_hash,
        "simhash": result.simhash,
        "outlinks": [(link.url, link.anchor, link.rel) for link in result.outlinks],
        "links_rejected": result.links_rejected,
        "robots": result.robots,
    }


def sitemap_entries(conf: dict, rows) -> Iterator[dict]:
    """Spark task: the URL-set entries of fetched sitemaps, normalized and filtered."""
    url_filter = UrlFilter(conf)  # once per partition
    for row in rows:
        parsed = parse_sitemap(
            row["url"], bytes(row["content"] or b""), conf["sitemap.content.limit"]
        )
        if parsed.kind == "index":
            continue  # the fetcher fetched the sitemaps it lists
        for entry in parsed.entries:
            key, _ = clean(entry.loc, url_filter)
            if key is not None:
                yield {
                    "url": key,
                    "lastmod": entry.lastmod_ms,
                    "changefreq": entry.changefreq_s,
                    "priority": entry.priority,
                    "sitemap": row["url"],
                }


def parse_sitemaps(spark, conf, segment: Segment) -> int:
    """Write the segment's sitemap entries to its ``sitemaps`` table; how many."""
    from pyspark.sql import functions as F

    if not segment.summary("fetched").get("sitemaps"):
        return 0
    fetched = spark.read.format("delta").load(segment.table("fetch"))
    sitemaps = fetched.where(
        (F.col("origin") == ORIGIN_SITEMAP) & (F.col("fetch_status") == st.SUCCESS)
    ).select("url", "content")
    rows = sitemaps.rdd.mapPartitions(partial(sitemap_entries, conf.as_dict()))
    with delta_commit_message(spark, f"trawl parse sitemaps segment={segment.name}"):
        rows_to_df(spark, rows, SITEMAPS).write.format("delta").mode("overwrite").save(
            segment.table("sitemaps")
        )
    return spark.read.format("delta").load(segment.table("sitemaps")).count()


def parse(spark, conf, segment: Segment) -> dict:
    """Parse the segment's successful fetches into its parse table."""
    from pyspark.sql import functions as F

    clock = Stopwatch()
    fetched = pages(spark.read.format("delta").load(segment.table("fetch")))
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
    table = spark.read.format("delta").load(segment.table("parse"))
    figures = table.agg(
        F.count("*").alias("pages"),
        F.sum(F.when(F.col("parse_status") == "success", 1).otherwise(0)).alias("html"),
        F.sum(F.when(F.col("parse_status") == "failed", 1).otherwise(0)).alias("failed"),
        F.coalesce(F.sum(F.size("outlinks")), F.lit(0)).alias("outlinks"),
    ).collect()[0]
    summary = {key: int(figures[key] or 0) for key in ("pages", "html", "failed", "outlinks")}
    summary["sitemap_urls"] = parse_sitemaps(spark, conf, segment)
    summary["seconds"] = round(clock.seconds, 1)
    segment.mark("parsed", summary)
    record(spark, segment.root, "parse", segment.name, summary)
    keys = ("pages", "html", "failed", "outlinks", "sitemap_urls")
    progress("parse", [(key, summary[key]) for key in keys])
    return summary


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("parse", build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
