"""dedup: mark duplicate pages in the crawldb (status ``duplicate``, ``duplicate_of``).

Usage: ``submit.sh dedup --data DIR``. Among fetched pages:

- exact duplicates share a SHA-256 ``content_hash``;
- near-duplicates have 64-bit SimHashes at most ``dedup.simhash.distance`` bits apart.
  Candidate pairs come from banding (Manku et al. 2007): the fingerprint is cut into
  four 16-bit blocks and only pages sharing a block are compared, which finds every
  pair within 3 bits without comparing all pairs.

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

from engine.cli import job_main, job_parser
from engine.delta_commits import delta_commit_message
from engine.layout import DataDir, crawldb_required
from engine.metrics import record
from engine.progress import progress
from engine.store import read_crawldb
from lib import vocabulary as st
from lib.clock import Stopwatch

BANDS = 4
BAND_BITS = 16


def build_parser():
    """Command line of the job."""
    return job_parser("dedup", __doc__.splitlines()[0])


def run(spark, conf, args) -> int:
    """Mark duplicates in the crawldb."""
    data, clock = DataDir.at(args.data, conf), Stopwatch()
    summary = dedup(spark, conf, data)
    record(spark, data.root, "dedup", None, {**summary, "seconds": clock.seconds})
    return 0


def keep_order():
    """Best copy first: highest score, shortest URL, earliest fetch, URL."""
    from pyspark.sql import functions as F

    return [
        F.col("score").desc(),
        F.length("url").asc(),
        F.col("last_fetch_time").asc(),
        F.col("url").asc(),
    ]


def exact_duplicates(pages):
    """``(url, duplicate_of)`` for pages whose body another, better page has too."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    group = Window.partitionBy("content_hash").orderBy(*keep_order())
    ranked = pages.withColumn("_rank", F.row_number().over(group)).withColumn(
        "_kept", F.first("url").over(group)
    )
    return ranked.where(F.col("_rank") > 1).select("url", F.col("_kept").alias("duplicate_of"))


def keep_key():
    """A struct that sorts like ``keep_order``: the smaller key is the copy kept. Comparing
    keys in a join needs no global ranking of all pages."""
    from pyspark.sql import functions as F

    return F.struct(
        (-F.col("score")).alias("s"),
        F.length("url").alias("n"),
        F.col("last_fetch_time").alias("t"),
        F.col("url").alias("u"),
    )


def near_duplicates(pages, distance: int):
    """``(url, duplicate_of)`` for pages within ``distance`` bits of a better page."""
    from pyspark.sql import functions as F

    blocks = F.array(
        *[
            F.struct(
                F.lit(i).alias("band"),
                F.shiftright("simhash", i * BAND_BITS).bitwiseAND(0xFFFF).alias("block"),
            )
            for i in range(BANDS)
        ]
    )
    bands = (
        pages.where(F.col("simhash").isNotNull())
        .select("url", "simhash", keep_key().alias("key"), F.explode(blocks).alias("b"))
        .select("url", "simhash", "key", "b.band", "b.block")
    )
    worse, better = bands.alias("w"), bands.alias("k")
    pairs = worse.join(
        better,
        (F.col("w.band") == F.col("k.band"))
        & (F.col("w.block") == F.col("k.block"))
        & (F.col("k.key") < F.col("w.key")),
    ).where(F.bit_count(F.col("w.simhash").bitwiseXOR(F.col("k.simhash"))) <= distance)
    best = pairs.groupBy(F.col("w.url").alias("url")).agg(F.min("k.key").alias("kept"))
    return best.select("url", F.col("kept.u").alias("duplicate_of"))


def canonical_duplicates(pages):
    """``(url, duplicate_of)`` for pages naming a canonical URL of their site that has been
    fetched and names no canonical itself (so that chains and cycles mark nothing)."""
    from pyspark.sql import functions as F

    targets = pages.where(F.col("canonical").isNull()).select(F.col("url").alias("duplicate_of"))
    naming = pages.where(F.col("canonical").isNotNull()).select(
        "url", F.col("canonical").alias("duplicate_of")
    )
    return naming.join(targets, "duplicate_of").select("url", "duplicate_of")


def dedup(spark, conf, data: DataDir) -> dict:
    """Find duplicates and write them to the crawldb in one Delta MERGE."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    crawldb = read_crawldb(spark, data)
    pages = crawldb.where(
        F.col("status").isin(st.FETCHED, st.NOTMODIFIED, st.DUPLICATE)
        & F.col("content_hash").isNotNull()
    )
    canonical = pages.limit(0).select("url", F.col("url").alias("duplicate_of"))
    if conf["dedup.canonical"]:
        canonical = canonical_duplicates(pages).cache()
    # Content duplicates among the other pages only: a canonical target stays kept.
    by_content = pages.join(canonical, "url", "left_anti")
    exact = exact_duplicates(by_content)
    found = canonical.unionByName(exact)
    distance = conf["dedup.simhash.distance"]
    if distance >= 0:
        # Near-duplicates among the exact groups' kept pages only.
        singles = by_content.join(exact, "url", "left_anti")
        found = found.unionByName(near_duplicates(singles, distance))
    found = found.cache()
    restored = pages.where(F.col("status") == st.DUPLICATE).join(found, "url", "left_anti")
    updates = found.select("url", F.lit(st.DUPLICATE).alias("status"), "duplicate_of").unionByName(
        restored.select(
            "url",
            F.lit(st.FETCHED).alias("status"),
            F.lit(None).cast("string").alias("duplicate_of"),
        )
    )
    summary = {
        "canonical": canonical.count(),
        "exact": exact.count(),
        "duplicates": found.count(),
        "restored": restored.count(),
    }
    with delta_commit_message(spark, "trawl dedup"):
        (
            DeltaTable.forPath(spark, data.crawldb)
            .alias("t")
            .merge(updates.alias("s"), "t.url = s.url")
            .whenMatchedUpdate(set={"status": "s.status", "duplicate_of": "s.duplicate_of"})
            .execute()
        )
    found.unpersist()
    canonical.unpersist()
    progress("dedup", [(key, value) for key, value in summary.items()])
    return summary


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("dedup", build_parser(), run, argv, crawldb_required)


if __name__ == "__main__":
    sys.exit(main())
