"""crawl's round dedup inside updatedb's own write (``crawl.dedup``).

The round's duplicates are found on the crawldb as updatedb is about to leave it (its
rows read once, with the changed rows in their place), and the verdicts ride in the same
commit as the round's update: no second read of the crawldb and no second rewrite of its
files (a MERGE of its own was a fifth of updatedb's time on a large crawldb, and a dozen
Spark jobs a round on a small one). The rules are ``crawldb.duplicates``', run by
``engine.executors.duplicates``, as for ``jobs.dedup.dedup_segment``, which crawl still
runs for a segment updated without them (by ``updatedb`` alone, or a round killed in
between).
"""

from __future__ import annotations

from functools import partial

from crawldb import duplicates
from crawldb.schema import CRAWLDB
from engine.executors.duplicates import content_condition, content_pages, page_frame, verdicts
from engine.runtime.layout import DEDUPED, Segment
from engine.runtime.progress import progress
from engine.tables.frames import with_timestamps
from engine.tables.metrics import record


def pages_after(old, changed, segment: str):
    """The crawldb's content pages (``page_frame``'s rows) as they are once ``changed``
    (its changed rows) replaces their rows of ``old``.

    The rows of ``old`` replaced are told by a broadcast of the few changed rows that
    can have been content pages (content pages still, or fetched in the round: a page's
    status changes only by a fetch), so the crawldb's pages are never shuffled."""
    from pyspark.sql import functions as F

    fresh = F.col("segment") == segment
    replaced = changed.where(content_condition() | fresh).select("url")
    kept = content_pages(old).join(F.broadcast(replaced), "url", "left_anti")
    now = content_pages(changed)
    return page_frame(kept, fresh).unionByName(page_frame(now, fresh))


def round_duplicates(
    old, changed, segment: str, conf: dict, urls: int | None, fetched: int | None = None
):
    """``(rows, summary)``: the rows to write, ``changed`` with the round's verdicts and
    the rows of ``old`` they change (earlier pages now copies of a better page of the
    round), checkpointed, so that nothing of it reads the crawldb once ``old`` is
    released; and the pass's figures (``duplicates``, ``restored``). ``urls``: the
    crawldb's URLs (None: unknown); ``fetched``: the segment's fetch rows, which bound
    its pages (None: unknown). The rules run in the driver over the whole crawldb's
    content pages up to ``crawl.dedup.driver.urls``, else by Spark's tasks."""
    small = urls is not None and urls <= conf["crawl.dedup.driver.urls"]
    pages = pages_after(old, changed, segment)
    found = verdicts(pages, conf, small, narrow=True, fresh_at_most=fetched)
    return applied(old, changed, found), summary_of(found)


def summary_of(found) -> dict:
    """The pass's figures of its verdicts (``FINAL_DDL``)."""
    import pyarrow.compute as pc

    restored = pc.sum(pc.equal(found.column("kind"), "restored")).as_py() or 0
    return {"duplicates": found.num_rows - restored, "restored": restored}


def applied(old, changed, found):
    """``changed`` with the verdicts that change a page applied, plus the rows of
    ``old`` they change, as stored, by ``crawldb.duplicates.with_verdicts`` in Spark's
    tasks over the rows judged alone; the rows of ``old`` are found by joins against the
    few verdicts (the crawldb is never shuffled) and checkpointed."""
    from pyspark.sql import functions as F

    found = found.filter(found.column("changed"))
    if not found.num_rows:
        return changed
    spark = changed.sparkSession
    urls = F.broadcast(spark.createDataFrame(found.select(["url"])).localCheckpoint(eager=True))
    in_round = F.broadcast(changed.select("url").join(urls, "url", "left_semi"))
    earlier = old.join(F.broadcast(urls.join(in_round, "url", "left_anti")), "url", "left_semi")
    earlier = with_timestamps(earlier, CRAWLDB).select(*changed.columns)
    rows = changed.unionByName(earlier.localCheckpoint(eager=True))
    shared = spark.sparkContext.broadcast(found.select(["url", "status", "duplicate_of"]))
    # Only the rows judged cross to Python: the rule leaves every other row as it is.
    judged = rows.join(urls, "url", "left_semi")
    judged = judged.mapInArrow(partial(_verdicts_task, shared), rows.schema)
    return rows.join(urls, "url", "left_anti").unionByName(judged)


def _verdicts_task(shared, batches):
    import pyarrow as pa

    for batch in batches:
        yield from duplicates.with_verdicts(
            pa.Table.from_batches([batch]), shared.value
        ).to_batches()


def mark_round(spark, data_root: str, segment: Segment, summary: dict) -> None:
    """Record that the round's duplicates are marked: the segment's ``_deduped.done`` (a
    rerun after a kill does it once), the metrics row and the progress line."""
    segment.mark(DEDUPED, summary)
    record(spark, data_root, "dedup", segment.name, summary)
    progress("dedup", [("duplicates", summary["duplicates"]), ("restored", summary["restored"])])
