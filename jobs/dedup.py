"""dedup: mark duplicate pages in the crawldb (status ``duplicate``, ``duplicate_of``).

Usage: ``submit.sh dedup --data DIR``. Among fetched pages:

- exact duplicates share a SHA-256 ``content_hash``;
- near-duplicates have MinHash sketches that estimate a Jaccard resemblance of their
  word 3-shingles of at least ``dedup.minhash.threshold``: pages meet when one of the
  sketch's 16 bands of 4 bytes agrees (LSH), and only those pairs are compared; or
  64-bit SimHashes at most ``dedup.simhash.distance`` bits apart, whose candidates come
  from banding too (Manku et al. 2007: four 16-bit blocks, which finds every pair
  within 3 bits).

``crawl`` runs the same rules every round (``crawl.dedup``) on the round's pages only:
each page fetched in the round is compared with the pages of the whole crawldb that
share its SHA-256, a MinHash band or a SimHash block, and of each pair found the page
ranked lower becomes a duplicate of the other (a page already a duplicate stays one).
This job is the full pass: it compares all pages and restores pages no longer
duplicated; running it after the rounds' passes changes nothing it would not have set.

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
from lib.content.fingerprint import MINHASH_BANDS, MINHASH_ROWS, MINHASH_SIZE

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


def simhash_bands():
    """A page's SimHash blocks, each with its band number (Manku et al.'s banding)."""
    from pyspark.sql import functions as F

    blocks = [F.shiftright("simhash", i * BAND_BITS).bitwiseAND(0xFFFF) for i in range(BANDS)]
    return F.array(
        *[
            F.struct(F.lit(i).alias("band"), F.hex(block).alias("block"))
            for i, block in enumerate(blocks)
        ]
    )


def minhash_bands():
    """A page's MinHash bands, each with its band number (after the SimHash's)."""
    from pyspark.sql import functions as F

    return F.array(
        *[
            F.struct(
                F.lit(BANDS + i).alias("band"),
                F.hex(F.substring("minhash", i * MINHASH_ROWS + 1, MINHASH_ROWS)).alias("block"),
            )
            for i in range(MINHASH_BANDS)
        ]
    )


def banded(pages, conf):
    """``(url, simhash, minhash, key, band, block)``: a row per band of every page, for
    the bands the settings use; None when near-duplicate detection is off."""
    from pyspark.sql import functions as F

    parts = []
    if conf["dedup.simhash.distance"] >= 0:
        parts.append(F.when(F.col("simhash").isNotNull(), simhash_bands()))
    if conf["dedup.minhash.threshold"] >= 0:
        parts.append(F.when(F.col("minhash").isNotNull(), minhash_bands()))
    if not parts:
        return None
    bands = F.concat(*[F.coalesce(part, F.array().cast(part_type())) for part in parts])
    exploded = pages.select(
        "url", "simhash", "minhash", keep_key().alias("key"), F.explode(bands).alias("b")
    )
    return exploded.select("url", "simhash", "minhash", "key", "b.band", "b.block")


def part_type() -> str:
    """The type of ``banded``'s band arrays."""
    return "array<struct<band:int,block:string>>"


def near_match(conf):
    """Whether two pages of a pair (columns ``simhash``/``minhash`` and ``k_simhash``/
    ``k_minhash``) are near duplicates: SimHashes within the distance, or sketches that
    resemble enough."""
    import math

    from pyspark.sql import functions as F

    matches = []
    distance = conf["dedup.simhash.distance"]
    if distance >= 0:
        xor = F.col("simhash").bitwiseXOR(F.col("k_simhash"))
        matches.append(F.bit_count(xor) <= distance)
    threshold = conf["dedup.minhash.threshold"]
    if threshold >= 0:
        # Sketch bytes agree with probability J + (1 - J) / 256 (b-bit MinHash).
        needed = math.ceil(MINHASH_SIZE * (threshold * 255 / 256 + 1 / 256))
        agree = F.expr(
            f"aggregate(sequence(1, {MINHASH_SIZE}), 0, (acc, i) -> acc + "
            "if(substring(minhash, i, 1) = substring(k_minhash, i, 1), 1, 0))"
        )
        matches.append(agree >= needed)
    condition = matches[0]
    for match in matches[1:]:
        condition = condition | match
    return F.coalesce(condition, F.lit(False))


def pair_fingerprints(one: str, other: str) -> list:
    """The fingerprint columns of a joined pair, as ``near_match`` reads them."""
    from pyspark.sql import functions as F

    return [
        F.col(f"{one}.simhash").alias("simhash"),
        F.col(f"{one}.minhash").alias("minhash"),
        F.col(f"{other}.simhash").alias("k_simhash"),
        F.col(f"{other}.minhash").alias("k_minhash"),
    ]


def near_pairs(worse, better, conf):
    """``(url, kept)``: pages of ``worse`` near a better-ranked page of ``better`` (both
    from ``banded``), with that page's key, one row per pair."""
    from pyspark.sql import functions as F

    w, k = worse.alias("w"), better.alias("k")
    met = w.join(
        k,
        (F.col("w.band") == F.col("k.band"))
        & (F.col("w.block") == F.col("k.block"))
        & (F.col("k.key") < F.col("w.key")),
    ).select(
        F.col("w.url").alias("url"), F.col("k.key").alias("kept"), *pair_fingerprints("w", "k")
    )
    pairs = met.dropDuplicates(["url", "kept"])
    return pairs.where(near_match(conf)).select("url", "kept")


def near_duplicates(pages, conf):
    """``(url, duplicate_of)`` for pages near a better page (the best of them)."""
    from pyspark.sql import functions as F

    bands = banded(pages, conf)
    if bands is None:
        return pages.limit(0).select("url", F.col("url").alias("duplicate_of"))
    best = near_pairs(bands, bands, conf).groupBy("url").agg(F.min("kept").alias("kept"))
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


def content_pages(crawldb):
    """The crawldb's pages with content: fetched, not modified, or duplicates."""
    from pyspark.sql import functions as F

    status = F.col("status").isin(st.FETCHED, st.NOTMODIFIED, st.DUPLICATE)
    return crawldb.where(status & F.col("content_hash").isNotNull())


def dedup(spark, conf, data: DataDir) -> dict:
    """Find duplicates among all pages and write them to the crawldb in one commit."""
    from pyspark.sql import functions as F

    pages = content_pages(read_crawldb(spark, data))
    canonical = pages.limit(0).select("url", F.col("url").alias("duplicate_of"))
    if conf["dedup.canonical"]:
        canonical = canonical_duplicates(pages).cache()
    # Content duplicates among the other pages only: a canonical target stays kept.
    by_content = pages.join(canonical, "url", "left_anti")
    exact = exact_duplicates(by_content)
    found = canonical.unionByName(exact)
    # Near-duplicates among the exact groups' kept pages only.
    singles = by_content.join(exact, "url", "left_anti")
    found = found.unionByName(near_duplicates(singles, conf)).cache()
    restored = pages.where(F.col("status") == st.DUPLICATE).join(found, "url", "left_anti")
    summary = {
        "canonical": canonical.count(),
        "exact": exact.count(),
        "duplicates": found.count(),
        "restored": restored.count(),
    }
    write_verdicts(spark, data, found, restored, "trawl dedup")
    found.unpersist()
    canonical.unpersist()
    progress("dedup", list(summary.items()))
    return summary


def write_verdicts(spark, data: DataDir, found, restored, message: str) -> None:
    """Mark ``found`` (url, duplicate_of) duplicates and set ``restored`` (url) back to
    fetched, in one Delta MERGE labelled ``message``."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    updates = found.select("url", F.lit(st.DUPLICATE).alias("status"), "duplicate_of").unionByName(
        restored.select(
            "url",
            F.lit(st.FETCHED).alias("status"),
            F.lit(None).cast("string").alias("duplicate_of"),
        )
    )
    with delta_commit_message(spark, message):
        (
            DeltaTable.forPath(spark, data.crawldb)
            .alias("t")
            .merge(updates.alias("s"), "t.url = s.url")
            .whenMatchedUpdate(set={"status": "s.status", "duplicate_of": "s.duplicate_of"})
            .execute()
        )


def round_pairs(fresh, pages, conf):
    """``(url, kept)``: every page worse than a page it duplicates by content, where one
    of the two was fetched in the round (``fresh``) and the other is any page."""
    from pyspark.sql import functions as F

    f = fresh.select("url", "content_hash", keep_key().alias("key")).alias("f")
    p = pages.select("url", "content_hash", keep_key().alias("key")).alias("p")
    same = f.join(p, F.col("f.content_hash") == F.col("p.content_hash"))
    same = same.where(F.col("f.url") != F.col("p.url"))
    worse_fresh = same.where(F.col("p.key") < F.col("f.key")).select(
        F.col("f.url").alias("url"), F.col("p.key").alias("kept")
    )
    worse_old = same.where(F.col("f.key") < F.col("p.key")).select(
        F.col("p.url").alias("url"), F.col("f.key").alias("kept")
    )
    pairs = worse_fresh.unionByName(worse_old)
    fresh_bands, page_bands = banded(fresh, conf), banded(pages, conf)
    if fresh_bands is not None:
        pairs = pairs.unionByName(round_near_pairs(fresh_bands, page_bands, conf))
    return pairs


def round_near_pairs(fresh_bands, page_bands, conf):
    """``(url, kept)`` of near duplicates between the round's pages and any page, in
    one join: of each pair met and matched, the worse-ranked page with the other's key."""
    from pyspark.sql import functions as F

    f, p = fresh_bands.alias("f"), page_bands.alias("p")
    met = f.join(
        p,
        (F.col("f.band") == F.col("p.band"))
        & (F.col("f.block") == F.col("p.block"))
        & (F.col("f.url") != F.col("p.url")),
    ).select(
        F.col("f.url").alias("f_url"),
        F.col("p.url").alias("p_url"),
        F.col("f.key").alias("f_key"),
        F.col("p.key").alias("p_key"),
        *pair_fingerprints("f", "p"),
    )
    matched = met.dropDuplicates(["f_url", "p_url"]).where(near_match(conf))
    fresh_worse = F.col("p_key") < F.col("f_key")
    return matched.select(
        F.when(fresh_worse, F.col("f_url")).otherwise(F.col("p_url")).alias("url"),
        F.when(fresh_worse, F.col("p_key")).otherwise(F.col("f_key")).alias("kept"),
    )


def dedup_segment(spark, conf, data: DataDir, segment: str) -> dict:
    """The round's pass (``crawl.dedup``): the pages fetched in ``segment`` against the
    whole crawldb, by the same rules as ``dedup``. A page of the round takes the verdict
    (duplicate of the best page it duplicates, else not a duplicate); an earlier page
    becomes a duplicate of a better page of the round, unless it is one already."""
    from pyspark.sql import functions as F

    pages = content_pages(read_crawldb(spark, data)).cache()
    canonical = canonical_duplicates(pages) if conf["dedup.canonical"] else None
    # As in the full pass: a page that is a duplicate of its canonical is not compared.
    by_content = pages if canonical is None else pages.join(canonical, "url", "left_anti")
    fresh = by_content.where(F.col("segment") == segment)
    best = round_pairs(fresh, by_content, conf).groupBy("url").agg(F.min("kept").alias("kept"))
    found = best.select("url", F.col("kept.u").alias("duplicate_of"))
    if canonical is not None:
        touched = pages.where(F.col("segment") == segment).select("url")
        targets = touched.select(F.col("url").alias("duplicate_of"))
        canonical = canonical.join(touched, "url", "left_semi").unionByName(
            canonical.join(targets, "duplicate_of", "left_semi")
        )
        found = found.join(canonical, "url", "left_anti").unionByName(canonical)
    states = pages.select("url", "status", F.col("segment").alias("_segment"))
    found = (
        found.join(states, "url")
        .where((F.col("_segment") == segment) | (F.col("status") != st.DUPLICATE))
        .select("url", "duplicate_of")
        .cache()
    )
    restored = (
        pages.where((F.col("segment") == segment) & (F.col("status") == st.DUPLICATE))
        .join(found, "url", "left_anti")
        .select("url")
    )
    summary = {"duplicates": found.count(), "restored": restored.count()}
    if summary["duplicates"] or summary["restored"]:  # else no commit, no MERGE's scans
        write_verdicts(spark, data, found, restored, f"trawl dedup segment={segment}")
    found.unpersist()
    pages.unpersist()
    return summary


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("dedup", build_parser(), run, argv, crawldb_required)


if __name__ == "__main__":
    sys.exit(main())
