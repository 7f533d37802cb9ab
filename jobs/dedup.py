"""dedup: mark duplicate pages in the crawldb (status ``duplicate``, ``duplicate_of``).

Usage: ``submit.sh dedup --data DIR``. Among fetched pages:

- exact duplicates share a SHA-256 ``content_hash``;
- near-duplicates have MinHash sketches that estimate a Jaccard resemblance of their
  word 3-shingles of at least ``dedup.minhash.threshold``: pages meet when one of the
  sketch's 16 bands of 4 bytes agrees (LSH), and only those pairs are compared; or
  64-bit SimHashes at most ``dedup.simhash.distance`` bits apart, tested for every pair
  that meets. Pages without a sketch (fetched before sketches were kept, or with
  ``dedup.minhash.threshold`` -1) meet their candidates by SimHash banding (Manku et
  al. 2007: four 16-bit blocks, which finds every pair within 3 bits); two sketched
  pages meet on their MinHash bands only, as SimHashes within a few bits come from
  texts that resemble far above the threshold.

``crawl`` runs the same rules every round (``crawl.dedup``) on the round's pages only,
inside updatedb's commit (``engine.executors.round_dedup``; ``dedup_segment`` below is the same
pass on its own, for a segment updated without it): each page fetched in the round is
compared with the pages of the whole crawldb that share its SHA-256 or a band, and of
each pair found the page ranked lower becomes a duplicate of the other (a page already
a duplicate stays one).
This job is the full pass: the same rules with every page taken as the round's, so
that it compares all pages and restores pages no longer duplicated; running it after
the rounds' passes changes nothing it would not have set. The rules are written once
(``crawldb/duplicates.py``) and run in the driver on a small crawldb, by Spark's tasks
on a large one (``engine/executors/duplicates.py``).

A page naming another URL of its site as canonical (``dedup.canonical``) is a duplicate of
it once that URL has been fetched; such pages take no part in the content comparisons, so
the canonical is the copy kept. Otherwise, which copy is kept is deterministic: the
highest score, then the shortest URL, then the earliest fetch, then the URL in byte
order. Every other page of a group points at the kept one. A near-duplicate points at
the best-ranked page within the distance (groups are not closed transitively). A page no
longer duplicated is set back to ``fetched``.
"""

from __future__ import annotations

import sys

from engine.executors.duplicates import content_pages, page_frame, verdicts
from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import DataDir, crawldb_required
from engine.runtime.progress import progress
from engine.tables.delta_commits import delta_commit_message
from engine.tables.delta_files import table_rows
from engine.tables.metrics import record
from engine.tables.store import read_crawldb
from lib import vocabulary as st
from lib.clock import Stopwatch


def build_parser():
    """Command line of the job."""
    return job_parser("dedup", __doc__.splitlines()[0])


def run(spark, conf, args) -> int:
    """Mark duplicates in the crawldb."""
    data, clock = DataDir.at(args.data, conf), Stopwatch()
    summary = dedup(spark, conf, data)
    record(spark, data.root, "dedup", None, {**summary, "seconds": clock.seconds})
    return 0


def dedup(spark, conf, data: DataDir) -> dict:
    """Find duplicates among all pages and write them to the crawldb in one commit."""
    from pyspark.sql import functions as F

    found = judged(spark, conf, data, F.lit(True), narrow=False)
    summary = {
        "canonical": _count(found, "kind", "canonical"),
        "exact": _count(found, "kind", "exact"),
        "duplicates": _count(found, "status", st.DUPLICATE),
        "restored": _count(found, "kind", "restored"),
    }
    write_verdicts(spark, data, found, "trawl dedup")
    progress("dedup", list(summary.items()))
    return summary


def judged(spark, conf, data: DataDir, fresh, narrow: bool):
    """The verdicts (``crawldb.duplicates.FINAL_DDL``) of the crawldb's content pages,
    those of ``fresh`` (a column) compared with all: in the driver up to
    ``crawl.dedup.driver.urls`` URLs, else by Spark's tasks (``narrow``: the round's
    keys picked out first, for a round's few pages)."""
    urls = table_rows(data.crawldb)
    in_driver = urls is not None and urls <= conf["crawl.dedup.driver.urls"]
    pages = page_frame(content_pages(read_crawldb(spark, data)), fresh)
    return verdicts(pages, dict(conf), in_driver, narrow)


def _count(found, column: str, value: str) -> int:
    import pyarrow.compute as pc

    return pc.sum(pc.equal(found.column(column), value)).as_py() or 0


def write_verdicts(spark, data: DataDir, found, message: str) -> None:
    """Write the verdicts of ``found`` that change a page (status and ``duplicate_of``)
    in one Delta MERGE labelled ``message``; none, no commit (a MERGE scans the crawldb
    whatever it changes)."""
    from delta.tables import DeltaTable

    found = found.filter(found.column("changed"))
    if not found.num_rows:
        return
    updates = spark.createDataFrame(found.select(["url", "status", "duplicate_of"]))
    with delta_commit_message(spark, message):
        (
            DeltaTable.forPath(spark, data.crawldb)
            .alias("t")
            .merge(updates.alias("s"), "t.url = s.url")
            .whenMatchedUpdate(set={"status": "s.status", "duplicate_of": "s.duplicate_of"})
            .execute()
        )


def dedup_segment(spark, conf, data: DataDir, segment: str) -> dict:
    """The round's pass (``crawl.dedup``): the pages fetched in ``segment`` against the
    whole crawldb, by the same rules as ``dedup``. A page of the round takes the verdict
    (duplicate of the best page it duplicates, else not a duplicate); an earlier page
    becomes a duplicate of a better page of the round, unless it is one already."""
    from pyspark.sql import functions as F

    from engine.executors.round_dedup import summary_of

    found = judged(spark, conf, data, F.col("segment") == segment, narrow=True)
    write_verdicts(spark, data, found, f"trawl dedup segment={segment}")
    return summary_of(found)


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("dedup", build_parser(), run, argv, crawldb_required)


if __name__ == "__main__":
    sys.exit(main())
