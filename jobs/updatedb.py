"""updatedb: merge a segment's fetches and outlinks into the crawldb (data flow step 5).

Usage: ``submit.sh updatedb --data DIR [--segment NAME]`` (default: the oldest segment
parsed but not updated). For every URL the segment touched (fetched, or linked to, or
the target of a redirect) the crawldb row is recomputed by ``crawldb.merge.update_row``
and only changed rows are written, in one Delta commit (``engine.tables.store.merge_rows``).
Running it twice on the same segment changes nothing: the second run finds no changed
row and makes no commit.
"""

from __future__ import annotations

import sys
from functools import partial

from crawldb import links, soft404
from crawldb.merge import changed_of_touched
from crawldb.schema import CRAWLDB, FETCH, SITEMAPS
from engine.caches.probe_cache import soft_404_templates, store_probes
from engine.executors.admission import admit
from engine.executors.bucket_merge import merged_by_buckets
from engine.executors.driver_update import in_driver, update_in_driver
from engine.executors.freshness import freshness
from engine.executors.hostdb import counts_hold, spark_changes, update_hostdb
from engine.executors.linkdb import update_linkdb
from engine.executors.round_dedup import mark_round, round_duplicates
from engine.runtime import write_behind
from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import (
    DataDir,
    Segment,
    add_segment_option,
    crawldb_required,
    run_on_segment,
    segment_required,
)
from engine.runtime.progress import PROGRESS_KEY, StageProgress, progress, spark_tasks
from engine.tables import arrow, buckets, prometheus
from engine.tables.delta_commits import delta_commit_message
from engine.tables.delta_files import LoggedFiles, read_current, table_rows
from engine.tables.frames import pages, with_millis, with_timestamps
from engine.tables.metrics import record
from engine.tables.store import merge_rows, read_crawldb
from lib.clock import Stopwatch, now_ms
from lib.url.normalize import UrlNormalizer
from lib.vocabulary import ORIGIN_PROBE

LINKS_DDL = (
    "url STRING, dedup_key STRING, host STRING, depth INT, score DOUBLE, redirect BOOLEAN,"
    " lastmod BIGINT, changefreq INT"
)


def build_parser():
    """Command line of the job."""
    parser = job_parser("updatedb", __doc__.splitlines()[0])
    add_segment_option(parser)
    return parser


def run(spark, conf, args) -> int:
    """Update the crawldb from one segment; 1 when there is none to apply."""
    done = run_on_segment(args, conf, "updated", lambda data, seg: updatedb(spark, conf, data, seg))
    prometheus.after_round(conf, args.data)
    return done


OUTLINKS_DDL = (
    "url STRING, depth INT, score DOUBLE, redirect BOOLEAN, lastmod BIGINT, changefreq INT"
)


def _outlink_batches(conf: dict, batches):
    """Pages (url, targets, link_metadata, canonical, host, depth, score) in; their
    links (``crawldb.links.outlinks``) out, folded within the batch (``OUTLINKS_DDL``)."""
    for batch in batches:
        yield from links.fold(links.outlinks(conf, batch.to_pylist())).to_batches()


def _redirect_batches(batches):
    import pyarrow as pa

    for batch in batches:
        yield from links.redirect_links(pa.Table.from_batches([batch])).to_batches()


def _sitemap_batches(conf: dict, batches):
    import pyarrow as pa

    for batch in batches:
        yield from links.sitemap_links(pa.Table.from_batches([batch]), conf).to_batches()


def _folded_batches(conf: dict, batches):
    """A partition of links by URL in; one row per URL out, with its dedup key and
    host (``LINKS_DDL``)."""
    import pyarrow as pa

    found = list(batches)
    if found:
        folded = links.fold(pa.Table.from_batches(found))
        yield from links.keyed(folded, UrlNormalizer(conf)).to_batches()


def links_frame(spark, conf: dict, fetch, parsed, old, sitemaps=None):
    """Per target URL, the round's links folded (``crawldb.links.fold``), with its dedup
    key and host: the outlinks of the parsed pages (each joined with its fetch rows and
    its status in ``old``, the crawldb; ``crawldb.links.followed`` picks the pages), the
    redirects' targets, the sitemaps' entries, made by ``crawldb.links``' functions in
    Python tasks, shuffled by URL and folded."""
    from pyspark.sql import functions as F

    targets = F.col("outlinks.url").alias("targets")
    fetches = fetch.select("url", "host", "depth", "score", "origin")
    pages = parsed.select("url", targets, link_metadata(parsed), "canonical").join(fetches, "url")
    pages = pages.join(old.select("url", F.col("status").alias("old_status")), "url", "left")
    found = pages.mapInArrow(partial(_outlink_batches, conf), OUTLINKS_DDL)
    hops = fetch.select("url", "redirect_to", "depth", "score")
    found = found.unionByName(hops.mapInArrow(_redirect_batches, OUTLINKS_DDL))
    if sitemaps is not None:
        entries = sitemaps.select("url", "lastmod", "changefreq", "priority")
        found = found.unionByName(entries.mapInArrow(partial(_sitemap_batches, conf), OUTLINKS_DDL))
    return found.repartition("url").mapInArrow(partial(_folded_batches, conf), LINKS_DDL)


def link_metadata(parsed):
    """The outlinks' metadata as a ``link_metadata`` column (null in a parse table
    written before outlinks carried metadata)."""
    from pyspark.sql import functions as F

    if "metadata" in parsed.schema["outlinks"].dataType.elementType.fieldNames():
        return F.col("outlinks.metadata").alias("link_metadata")
    return F.lit(None).cast("array<map<string, string>>").alias("link_metadata")


def touched_rows(spark, conf: dict, old, segment: Segment):
    """One row per URL the segment touched: its fetch and its links (admitted against
    ``old``: the crawldb with times in epoch ms); the links refused, with their
    ``reason``; and the cached frames, for the caller to unpersist."""
    from pyspark.sql import functions as F

    fetch = with_millis(pages(read_current(spark, segment.table("fetch"))), FETCH)
    fetch = fetch.drop("content", "headers")
    parsed = read_current(spark, segment.table("parse"))
    if "minhash" not in parsed.columns:  # parsed by a Trawl without MinHash sketches
        parsed = parsed.withColumn("minhash", F.lit(None).cast("binary"))
    fingerprints = parsed.select("url", "content_hash", "simhash", "minhash", "title", "canonical")
    fetched = fetch.join(fingerprints, "url", "left").where(F.col("origin") != ORIGIN_PROBE)
    listed = segment_sitemaps(spark, segment)
    # Cached: the links come out of Python and the admission reads them twice (known,
    # new); its verdicts are read twice too (the links kept, the refused counts).
    found = links_frame(spark, conf, fetch, parsed, old, listed).cache()
    decided = admit(found, old, conf, LINKS_DDL).cache()
    kept = decided.where(F.col("reason").isNull()).drop("reason")
    refused = decided.where(F.col("reason").isNotNull())
    touched = fetched.select("url", F.struct(*fetched.columns).alias("fetch")).join(
        kept.select("url", F.struct(*kept.columns).alias("links")), "url", "full_outer"
    )
    return touched, refused, [found, decided]


def with_old_rows(touched, old):
    """``touched`` with each URL's crawldb row (``old``) as an ``old`` struct, null for a
    URL new to the crawldb."""
    from pyspark.sql import functions as F

    return touched.join(old.select("url", F.struct(*old.columns).alias("old")), "url", "left")


def segment_sitemaps(spark, segment: Segment):
    """The segment's sitemap entries (written by parse), or None when it has none."""
    if not segment.summary("parsed").get("sitemap_urls"):
        return None
    return with_millis(read_current(spark, segment.table("sitemaps")), SITEMAPS)


def changed_rows(spark, settings: dict, data: DataDir, touched, segment: Segment, layout=None):
    """The crawldb rows the segment changes (``touched``: ``touched_rows``', without
    the crawldb's rows when it is bucketed by ``layout``: ``bucket_merge``), the pages
    that look like their host's soft-404 page made gone, computed and checkpointed."""
    from pyspark import StorageLevel

    spark_schema, arrow_schema = arrow.schemas(CRAWLDB)
    if layout:
        store = (data.storage, data.crawldb)
        merged = merged_by_buckets(touched, layout, settings, segment.name, now_ms(), *store)
    else:
        merge = partial(_merge_batches, settings, segment.name, now_ms(), arrow_schema)
        merged = touched.mapInArrow(merge, spark_schema)
    changed = with_timestamps(merged, CRAWLDB)
    templates = soft_404_templates(spark, settings, data, segment)
    if templates:
        distance = settings["dedup.simhash.distance"]
        mark = partial(_soft_404_batches, templates, segment.name, distance)
        changed = changed.mapInArrow(mark, changed.schema)
    # Computed once (it is read for the figures, for the files it touches and for their
    # rewrite), kept on the executors' disks (not their heaps: the blocks stay until the
    # JVM collects the frame) and cut from its plan, which reads the crawldb: a Spark
    # MERGE's commit (merge_rows' way for a table it cannot rewrite) re-plans every
    # cached frame that reads the crawldb.
    return changed.localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)


def updatedb(spark, conf, data: DataDir, segment: Segment, dedup: bool = False) -> dict:
    """Apply one segment to the crawldb; with ``dedup`` (crawl's ``crawl.dedup``), mark
    the round's duplicates in the same commit (``engine.executors.round_dedup``). A small crawldb
    is updated in the driver (``engine.executors.driver_update``, ``db.driver.urls``)."""
    clock = Stopwatch()
    settings = conf.as_dict()
    driver = in_driver(settings, data, segment)
    held = settings["hostdb.enabled"] and counts_hold(data)  # before the round's commit
    if driver:
        summary, deduped, changes = update_in_driver(spark, settings, data, segment, dedup)
    else:
        summary, deduped, changes = update_by_spark(spark, conf, data, segment, dedup)
    if settings["linkdb.enabled"]:
        summary["inlinks"] = update_linkdb(spark, settings, data, segment, driver)
    if settings["hostdb.enabled"]:
        held = held and not summary["opted_out_removed"]
        summary["hosts_updated"] = update_hostdb(
            spark, settings, data, segment, changes, held, driver
        )
    # Segments fetched before the count was kept have no figure: look for probes.
    if segment.summary("fetched").get("probes") != 0:
        write_behind.later(spark, "soft404", store_probes, data, segment)
    summary["seconds"] = round(clock.seconds, 1)
    segment.mark("updated", summary)
    record(spark, data.root, "updatedb", segment.name, summary)
    progress(
        "updatedb",
        [
            ("rows changed", summary["changed"]),
            ("new urls", summary["new"]),
            ("urls in crawldb", summary["crawldb"]),
            ("links rejected", sum(summary["rejected"].values())),
        ],
    )
    if deduped is not None:
        mark_round(spark, data.root, segment, deduped)
    return summary


def update_by_spark(spark, conf, data: DataDir, segment: Segment, dedup: bool):
    """``updatedb`` by Spark's jobs: ``(summary, deduped, changes)`` (``deduped``: None
    without ``dedup``; ``changes``: the hostdb's partial rows of URL counts, None when
    ``hostdb.enabled`` is off)."""
    from deltalake import DeltaTable
    from pyspark.sql import functions as F

    settings = conf.as_dict()
    # Read once: admission and the merge both scan it several times.
    old = read_crawldb(spark, data, millis=True).cache()
    logged = LoggedFiles.of(DeltaTable(data.crawldb))
    layout = buckets.layout(logged.names)
    touched, refused, cached = touched_rows(spark, settings, old, segment)
    if layout is None:
        touched = with_old_rows(touched, old)
    changed = changed_rows(spark, settings, data, touched, segment, layout)
    deduped = None
    if dedup:
        watch = Stopwatch()
        urls, fetched = logged.rows, table_rows(segment.table("fetch"))
        changed, deduped = round_duplicates(old, changed, segment.name, settings, urls, fetched)
        deduped["seconds"] = round(watch.seconds, 1)
    new = F.when((F.col("fetch_count") == 0) & F.col("segment").isNull(), 1).otherwise(0)
    figures = changed.agg(F.count("*").alias("changed"), F.sum(new).alias("new")).collect()[0]
    summary = {"changed": figures["changed"], "new": figures["new"] or 0}
    changes = spark_changes(old, changed) if settings["hostdb.enabled"] else None
    # Counted from the cached verdicts before the merge: a MERGE's commit clears the
    # caches built on the crawldb, and a recount would see the new URLs as known.
    rejected = rejected_counts(spark, segment, refused)
    # The other caches read the crawldb: dropped before the commit for the same
    # reason, dependants first, as unpersisting a frame re-plans the frames cached on it.
    for frame in (*reversed(cached), old):
        frame.unpersist()
    if summary["changed"]:
        watch = StageProgress("updatedb", "tasks", spark_tasks(spark), conf[PROGRESS_KEY])
        with watch:
            message = f"trawl updatedb segment={segment.name}"
            merge_rows(spark, data, changed, message, summary["changed"])
    summary["opted_out_removed"] = remove_opted_out(spark, data, settings["db.optout.hosts"])
    summary["freshness"] = freshness(read_crawldb(spark, data), now_ms())
    summary["crawldb"] = summary["freshness"]["urls"]
    summary["rejected"] = rejected
    return summary, deduped, changes


def remove_opted_out(spark, data: DataDir, hosts: list[str]) -> int:
    """Delete the crawldb rows of opted-out hosts (and their subdomains); returns how many."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    if not hosts:
        return 0
    condition = F.lit(False)
    for entry in (h.lower() for h in hosts):
        condition = condition | (F.col("host") == entry) | F.col("host").endswith("." + entry)
    doomed = read_crawldb(spark, data).where(condition).count()
    if doomed:
        with delta_commit_message(spark, "trawl updatedb opt-out"):
            DeltaTable.forPath(spark, data.crawldb).delete(condition)
    return doomed


def rejected_counts(spark, segment: Segment, refused) -> dict[str, int]:
    """Links kept out of the crawldb this round, by reason: by parse (scheme, filters,
    nofollow ...) and by updatedb's trap defences (``refused``: the links with the
    ``reason`` admission gave them)."""
    from pyspark.sql import functions as F

    counts = {r["reason"]: r["count"] for r in refused.groupBy("reason").count().collect()}
    by_parse = segment.summary("parsed").get("links_rejected")  # counted by the fetch tasks
    if by_parse is None:
        parsed = read_current(spark, segment.table("parse"))
        exploded = parsed.select(F.explode("links_rejected").alias("reason", "n"))
        grouped = exploded.groupBy("reason").agg(F.sum("n").alias("n")).collect()
        by_parse = {row["reason"]: int(row["n"]) for row in grouped}
    for reason, count in by_parse.items():
        counts[reason] = counts.get(reason, 0) + count
    return dict(sorted(counts.items()))


def _merge_batches(conf: dict, segment: str, stamp: int, schema, batches):
    """Touched rows (url, fetch, links, old) in as Arrow batches; the changed crawldb
    rows out (``schema``: the crawldb's, times in epoch ms)."""
    import pyarrow as pa

    normalizer = UrlNormalizer(conf)  # once per task
    for batch in batches:
        touched = pa.Table.from_batches([batch])
        yield from changed_of_touched(
            conf, segment, stamp, normalizer, touched, schema
        ).to_batches()


def _soft_404_batches(templates: dict, segment: str, distance: int, batches):
    """Changed crawldb rows in; those that look like their host's soft-404 page made
    gone (``crawldb.soft404.marked``) out."""
    import pyarrow as pa

    for batch in batches:
        yield from soft404.marked(
            pa.Table.from_batches([batch]), templates, segment, distance
        ).to_batches()


def check(conf, args) -> None:
    """Before Spark starts: the crawldb and the segment named, if any, exist."""
    crawldb_required(conf, args)
    segment_required(conf, args)


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("updatedb", build_parser(), run, argv, check)


if __name__ == "__main__":
    sys.exit(main())
