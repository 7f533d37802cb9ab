"""crawl's round dedup inside updatedb's own write (``crawl.dedup``).

The round's duplicates are found on the crawldb as updatedb is about to leave it (its
rows read once, with the changed rows in their place), and the verdicts ride in the same
commit as the round's update: no second read of the crawldb and no second rewrite of its
files (a MERGE of its own was a fifth of updatedb's time on a large crawldb, and a dozen
Spark jobs a round on a small one). The rules are ``engine.executors.duplicates.round_verdicts``',
the same as ``jobs.dedup.dedup_segment``'s, which crawl still runs for a segment updated
without them (by ``updatedb`` alone, or a round killed in between).
"""

from __future__ import annotations

from crawldb import duplicates
from crawldb.schema import CRAWLDB
from engine.executors.duplicates import PAGE_COLUMNS, content_pages, round_verdicts
from engine.executors.round_candidates import collected_pages, narrowed_pages, replacing
from engine.runtime.layout import DEDUPED, Segment
from engine.runtime.progress import progress
from engine.tables.frames import with_timestamps
from engine.tables.metrics import record
from lib import vocabulary as st

STATUS, OF = "_verdict_status", "_verdict_of"


def pages_after(old, changed, segment: str):
    """The crawldb's content pages (``PAGE_COLUMNS``) as they are once ``changed`` (its
    changed rows, times as TIMESTAMP) replaces their rows of ``old`` (times in ms).

    The rows of ``old`` replaced are told by a broadcast of the few changed rows that
    can have been content pages (``replacing``), so the crawldb's pages are never
    shuffled."""
    from pyspark.sql import functions as F

    now = content_pages(changed)
    replaced = replacing(changed, segment).select("url")
    kept = content_pages(old).select(*PAGE_COLUMNS).join(F.broadcast(replaced), "url", "left_anti")
    kept = kept.withColumn("last_fetch_time", F.timestamp_millis("last_fetch_time"))
    return kept.unionByName(now.select(*PAGE_COLUMNS))


def round_duplicates(old, changed, segment: str, conf: dict, urls: int | None):
    """``(rows, summary)``: the rows to write, ``changed`` with the round's verdicts and
    the rows of ``old`` they change (earlier pages now copies of a better page of the
    round), checkpointed, so that nothing of it reads the crawldb once ``old`` is
    released; and the pass's figures (``duplicates``, ``restored``). ``urls``: the
    crawldb's URLs (None: unknown). The verdicts are found in the driver
    (``crawldb.duplicates``) over the whole crawldb's content pages up to
    ``crawl.dedup.driver.urls``; above it, over the pages a round of up to
    ``crawl.dedup.driver.round`` pages depends on; for a larger round, by Spark."""
    if urls is not None and urls <= conf["crawl.dedup.driver.urls"]:
        pages = collected_pages(old, changed, segment)
        return driver_duplicates(old, changed, pages, conf, segment)
    if replacing(changed, segment).count() <= conf["crawl.dedup.driver.round"]:
        pages = narrowed_pages(old, changed, segment, conf)
        return driver_duplicates(old, changed, pages, conf, segment)
    return spark_duplicates(old, changed, segment, conf)


def spark_duplicates(old, changed, segment: str, conf: dict):
    """``round_duplicates`` by Spark: every step a frame."""
    from pyspark.sql import functions as F

    # Read by every step of the pass; released, with the frames the pass caches, once
    # the verdicts are out.
    pages = pages_after(old, changed, segment).cache()
    held = [pages]
    found, restored = round_verdicts(pages, segment, conf, held)
    null = F.lit(None).cast("string")
    verdicts = found.select(
        "url", F.lit(st.DUPLICATE).alias(STATUS), F.col("duplicate_of").alias(OF)
    ).unionByName(restored.select("url", F.lit(st.FETCHED).alias(STATUS), null.alias(OF)))
    verdicts = verdicts.localCheckpoint(eager=True)
    for frame in reversed(held):
        frame.unpersist()
    counts = {r[STATUS]: r["count"] for r in verdicts.groupBy(STATUS).count().collect()}
    summary = {"duplicates": counts.get(st.DUPLICATE, 0), "restored": counts.get(st.FETCHED, 0)}
    earlier = earlier_rows(old, changed, verdicts).localCheckpoint(eager=True)
    judged = changed.join(F.broadcast(verdicts), "url", "left")
    return judged_rows(judged).unionByName(earlier), summary


def driver_duplicates(old, changed, pages: dict, conf: dict, segment: str):
    """``round_duplicates`` in the driver, over ``pages`` (``collected_pages``' or
    ``narrowed_pages``'): the verdicts found by ``crawldb.duplicates``, and Spark joins
    only where a verdict changes a row."""
    from pyspark.sql import functions as F

    found, restored = duplicates.round_verdicts(pages, segment, conf)
    verdicts = [(url, st.DUPLICATE, target) for url, target in found.items()]
    verdicts += [(url, st.FETCHED, None) for url in restored]
    summary = {"duplicates": len(found), "restored": len(restored)}
    spark = changed.sparkSession
    schema = f"url STRING, {STATUS} STRING, {OF} STRING"
    ours = [v for v in verdicts if pages[v[0]]["_new"]]
    earlier = [
        v
        for v in verdicts
        if not pages[v[0]]["_new"]
        and (pages[v[0]]["status"], pages[v[0]]["duplicate_of"]) != (v[1], v[2])
    ]
    rows = changed
    if ours:
        judged = changed.join(F.broadcast(spark.createDataFrame(ours, schema)), "url", "left")
        rows = judged_rows(judged)
    if earlier:
        judged = old.join(F.broadcast(spark.createDataFrame(earlier, schema)), "url")
        stored = with_timestamps(judged_rows(judged), CRAWLDB).select(*changed.columns)
        rows = rows.unionByName(stored.localCheckpoint(eager=True))
    return rows, summary


def judged_rows(judged):
    """Crawldb rows joined with their verdicts (``STATUS``, ``OF``; null for none): the
    rows with the status and ``duplicate_of`` of their verdict, if they have one."""
    from pyspark.sql import functions as F

    has = F.col(STATUS).isNotNull()
    return (
        judged.withColumn("status", F.when(has, F.col(STATUS)).otherwise(F.col("status")))
        .withColumn("duplicate_of", F.when(has, F.col(OF)).otherwise(F.col("duplicate_of")))
        .drop(STATUS, OF)
    )


def earlier_rows(old, changed, verdicts):
    """The rows of ``old`` the round left alone that a verdict changes, as stored (a page
    already a duplicate of the same page is left out). Every join is against the few
    verdicts: none shuffles the crawldb."""
    from pyspark.sql import functions as F

    urls = F.broadcast(verdicts.select("url"))
    in_round = F.broadcast(changed.select("url").join(urls, "url", "left_semi"))
    others = F.broadcast(verdicts.join(in_round, "url", "left_anti"))
    judged = old.join(others, "url")
    same = (F.col("status") == F.col(STATUS)) & F.col("duplicate_of").eqNullSafe(F.col(OF))
    rows = judged_rows(judged.where(~same))
    return with_timestamps(rows, CRAWLDB).select(*changed.columns)


def mark_round(spark, data_root: str, segment: Segment, summary: dict) -> None:
    """Record that the round's duplicates are marked: the segment's ``_deduped.done`` (a
    rerun after a kill does it once), the metrics row and the progress line."""
    segment.mark(DEDUPED, summary)
    record(spark, data_root, "dedup", segment.name, summary)
    progress("dedup", [("duplicates", summary["duplicates"]), ("restored", summary["restored"])])
