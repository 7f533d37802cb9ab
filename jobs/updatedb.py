"""updatedb: merge a segment's fetches and outlinks into the crawldb (data flow step 5).

Usage: ``submit.sh updatedb --data DIR [--segment NAME]`` (default: the oldest segment
parsed but not updated). For every URL the segment touched (fetched, or linked to, or
the target of a redirect) the crawldb row is recomputed by ``crawldb.merge.update_row``
and only changed rows are written, in one Delta ``MERGE``. Running it twice on the same
segment changes nothing: the second run finds no changed row and makes no commit.
"""

from __future__ import annotations

import sys
from functools import partial

from crawldb.merge import update_row
from crawldb.schema import CRAWLDB, FETCH
from crawldb.scoring import outlink_shares
from jobs.common import (
    Stopwatch,
    job_main,
    job_parser,
    now_ms,
    progress,
    row_dict,
    rows_to_df,
    with_millis,
)
from jobs.fetch import pages
from jobs.layout import DataDir, Segment, add_segment_option, run_on_segment
from jobs.store import merge_rows, read_crawldb
from lib.urls import host_of

LINKS_DDL = "url STRING, depth INT, score DOUBLE"


def build_parser():
    """Command line of the job."""
    parser = job_parser("updatedb", __doc__.splitlines()[0])
    add_segment_option(parser)
    return parser


def run(spark, conf, args) -> int:
    """Update the crawldb from one segment; 1 when there is none to apply."""
    return run_on_segment(args, "updated", lambda data, seg: updatedb(spark, conf, data, seg))


def page_links(conf: dict, page) -> list[tuple[str, tuple[int, float]]]:
    """``(target, (depth, score share))`` for each kept outlink of a parsed page."""
    targets = [link["url"] for link in page["outlinks"] or []]
    if conf["db.ignore.external.links"]:
        targets = [url for url in targets if host_of(url) == page["host"]]
    shares = outlink_shares(page["score"], page["host"], [host_of(u) for u in targets], conf)
    return [(url, (page["depth"] + 1, share)) for url, share in zip(targets, shares, strict=True)]


def _combine(a: tuple[int, float], b: tuple[int, float]) -> tuple[int, float]:
    return min(a[0], b[0]), a[1] + b[1]


def links_frame(spark, conf: dict, fetched, parsed):
    """Per target URL: the least depth and summed score it got from this segment."""
    from pyspark.sql import functions as F

    pages = parsed.join(fetched.select("url", "host", "depth", "score"), "url")
    outlinks = pages.rdd.flatMap(partial(page_links, conf))
    redirects = (
        fetched.where(F.col("redirect_to").isNotNull())
        .select("redirect_to", "depth", "score")
        .rdd.map(lambda r: (r["redirect_to"], (r["depth"], r["score"] or 0.0)))
    )
    merged = outlinks.union(redirects).reduceByKey(_combine)
    return spark.createDataFrame(merged.map(lambda kv: (kv[0], *kv[1])), LINKS_DDL)


def touched_rows(spark, conf: dict, data: DataDir, segment: Segment):
    """One row per URL the segment touched: its fetch, its links and its crawldb row."""
    from pyspark.sql import functions as F

    fetch = with_millis(pages(spark.read.format("delta").load(segment.table("fetch"))), FETCH)
    fetch = fetch.drop("content", "headers")
    parsed = spark.read.format("delta").load(segment.table("parse"))
    fingerprints = parsed.select("url", "content_hash", "simhash", "title")
    fetched = fetch.join(fingerprints, "url", "left")
    links = links_frame(spark, conf, fetch, parsed.select("url", "outlinks"))
    old = read_crawldb(spark, data, millis=True)
    return (
        fetched.select("url", F.struct(*fetched.columns).alias("fetch"))
        .join(links.select("url", F.struct(*links.columns).alias("links")), "url", "full_outer")
        .join(old.select("url", F.struct(*old.columns).alias("old")), "url", "left")
    )


def updatedb(spark, conf, data: DataDir, segment: Segment) -> dict:
    """Apply one segment to the crawldb."""
    clock = Stopwatch()
    settings = conf.as_dict()
    touched = touched_rows(spark, settings, data, segment)
    merge = partial(_merge, settings, segment.name, now_ms())
    changed = rows_to_df(spark, touched.rdd.map(merge).filter(lambda r: r is not None), CRAWLDB)
    changed = changed.cache()
    summary = {"changed": changed.count()}
    summary["new"] = changed.where("fetch_count = 0 AND segment IS NULL").count()
    if summary["changed"]:
        merge_rows(spark, data, changed, f"trawl updatedb segment={segment.name}")
    changed.unpersist()
    summary["crawldb"] = read_crawldb(spark, data).count()
    summary["seconds"] = round(clock.seconds, 1)
    segment.mark("updated", summary)
    progress(
        "updatedb",
        [
            ("rows changed", summary["changed"]),
            ("new urls", summary["new"]),
            ("urls in crawldb", summary["crawldb"]),
        ],
    )
    return summary


def _merge(conf: dict, segment: str, stamp: int, row):
    url = row["url"]
    return update_row(
        url,
        host_of(url),
        row_dict(row["old"]),
        row_dict(row["fetch"]),
        row_dict(row["links"]),
        segment=segment,
        now_ms=stamp,
        conf=conf,
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("updatedb", build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
