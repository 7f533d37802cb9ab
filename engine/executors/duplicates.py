"""The rules of duplicate detection, as Spark frames: which pages are copies of which
(``jobs.dedup``'s full pass, and the round's pass of ``crawl``), and which copy is kept.
The rules themselves are told in ``jobs/dedup.py``'s docstring."""

from __future__ import annotations

from functools import reduce

from lib import vocabulary as st
from lib.content.fingerprint import MINHASH_BANDS, MINHASH_ROWS, MINHASH_SIZE

BANDS = 4
BAND_BITS = 16


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


def sketches_resemble(conf):
    """Whether two pages' MinHash sketches (columns ``minhash`` and ``k_minhash``) estimate
    a resemblance of at least ``dedup.minhash.threshold``; None when it is off."""
    import math

    from pyspark.sql import functions as F

    threshold = conf["dedup.minhash.threshold"]
    if threshold < 0:
        return None
    # Sketch bytes agree with probability J + (1 - J) / 256 (b-bit MinHash).
    needed = math.ceil(MINHASH_SIZE * (threshold * 255 / 256 + 1 / 256))
    agree = F.expr(
        f"aggregate(sequence(1, {MINHASH_SIZE}), 0, (acc, i) -> acc + "
        "if(substring(minhash, i, 1) = substring(k_minhash, i, 1), 1, 0))"
    )
    return F.coalesce(agree >= needed, F.lit(False))


def near_duplicates(pages, conf):
    """``(url, duplicate_of)`` for pages near a better page (the best of them): pages
    meet when a band agrees (one self-join of the band rows), and each pair met is
    judged once."""
    from pyspark.sql import functions as F

    bands = band_rows(pages, conf)
    if bands is None:
        return pages.limit(0).select("url", F.col("url").alias("duplicate_of"))
    met = meetings(bands, bands, conf).where(F.col("f_url") < F.col("p_url"))
    met = met.groupBy("f_url", "p_url").agg(F.max("near").alias("near"))
    pairs = judged_pairs(met.withColumn("exact", F.lit(False)), pages, conf)
    best = pairs.groupBy("url").agg(F.min("kept").alias("kept"))
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


def content_condition():
    """Whether a crawldb row is a page with content: fetched, not modified, or a
    duplicate, with a body hash."""
    from pyspark.sql import functions as F

    status = F.col("status").isin(st.FETCHED, st.NOTMODIFIED, st.DUPLICATE)
    return status & F.col("content_hash").isNotNull()


def content_pages(crawldb):
    """The crawldb's pages with content (``content_condition``)."""
    return crawldb.where(content_condition())


# The columns the passes read: the crawldb is read for these only.
PAGE_COLUMNS = (
    "url",
    "status",
    "duplicate_of",
    "segment",
    "content_hash",
    "simhash",
    "minhash",
    "score",
    "last_fetch_time",
    "canonical",
)


def simhash_blocks() -> list:
    """The ``BANDS`` blocks of a page's SimHash, of ``BAND_BITS`` bits each (Manku et al.)."""
    from pyspark.sql import functions as F

    mask = (1 << BAND_BITS) - 1
    return [F.shiftright("simhash", i * BAND_BITS).bitwiseAND(mask) for i in range(BANDS)]


def minhash_band_hashes() -> list:
    """A page's MinHash bands, each hashed with its number to 64 bits."""
    from pyspark.sql import functions as F

    return [
        F.xxhash64(F.lit(BANDS + i), F.substring("minhash", i * MINHASH_ROWS + 1, MINHASH_ROWS))
        for i in range(MINHASH_BANDS)
    ]


def band_rows(pages, conf):
    """``(url, h, by_minhash, sketched, simhash)``: one row per band of every page, the
    band's number and value hashed to 64 bits ``h`` (a collision only makes a candidate
    that is then rejected): MinHash bands (``by_minhash``) and SimHash blocks (Manku et
    al.); ``sketched``: the page has a MinHash sketch. None when near-duplicate detection
    is off."""
    from pyspark.sql import functions as F

    bands = []
    if conf["dedup.simhash.distance"] >= 0:
        blocks = simhash_blocks()
        bands += [(F.col("simhash"), F.xxhash64(F.lit(i), b), False) for i, b in enumerate(blocks)]
    sketches = conf["dedup.minhash.threshold"] >= 0
    if sketches:
        bands += [(F.col("minhash"), h, True) for h in minhash_band_hashes()]
    if not bands:
        return None
    rows = F.array(
        *[
            F.when(source.isNotNull(), F.struct(h.alias("h"), F.lit(kind).alias("by_minhash")))
            for source, h, kind in bands
        ]
    )
    sketched = F.col("minhash").isNotNull() if sketches else F.lit(False)
    exploded = pages.select(
        "url", "simhash", sketched.alias("sketched"), F.explode(rows).alias("b")
    )
    exploded = exploded.where(F.col("b").isNotNull())
    return exploded.select("url", "b.h", "b.by_minhash", "sketched", "simhash")


def meetings(left, right, conf):
    """``(f_url, p_url, near)``: pairs of a page of ``left`` and one of ``right`` (both
    ``band_rows``) that share a band, once per band shared, with ``near``: their SimHashes
    within ``dedup.simhash.distance`` (a cheap test on narrow rows, before any lookup).

    Two sketched pages meet on their MinHash bands only: a pair whose SimHashes are
    within a few bits resembles far above the threshold, and its bands agree. SimHash
    blocks, whose 16 bits every few thousand pages share by chance, are joined only where
    one page has no sketch (fetched before sketches were kept, or MinHash off)."""
    from pyspark.sql import functions as F

    f = left.select(
        F.col("url").alias("f_url"),
        "h",
        "by_minhash",
        F.col("sketched").alias("f_sketched"),
        F.col("simhash").alias("f_simhash"),
    )
    p = right.select(
        F.col("url").alias("p_url"),
        "h",
        F.col("by_minhash").alias("p_minhash"),
        F.col("sketched").alias("p_sketched"),
        F.col("simhash").alias("p_simhash"),
    )
    blocks_f, blocks_p = f.where(~F.col("by_minhash")), p.where(~F.col("p_minhash"))
    met = [
        f.where(F.col("by_minhash")).join(p.where(F.col("p_minhash")), "h"),
        blocks_f.where(~F.col("f_sketched")).join(blocks_p, "h"),
        blocks_f.where(F.col("f_sketched")).join(blocks_p.where(~F.col("p_sketched")), "h"),
    ]
    met = reduce(lambda a, b: a.unionByName(b), met).where(F.col("f_url") != F.col("p_url"))
    distance = conf["dedup.simhash.distance"]
    near = F.lit(False)
    if distance >= 0:
        near = F.coalesce(
            F.bit_count(F.col("f_simhash").bitwiseXOR(F.col("p_simhash"))) <= distance,
            F.lit(False),
        )
    met = met.where(F.col("by_minhash") | near)
    return met.select("f_url", "p_url", near.alias("near"))


def changed_verdicts(found, pages):
    """The verdicts of ``found`` (``url``, ``duplicate_of``) that change a page of ``pages``
    (``PAGE_COLUMNS``): a page that is already a duplicate of the same page is left out."""
    from pyspark.sql import functions as F

    current = pages.select("url", "status", F.col("duplicate_of").alias("_was"))
    same = (F.col("status") == st.DUPLICATE) & F.col("_was").eqNullSafe(F.col("duplicate_of"))
    return found.join(current, "url").where(~same).select("url", "duplicate_of")


def round_pairs(fresh, pages, conf, held: list):
    """``(url, kept)``: every page worse than a page it duplicates by content, where one
    of the two was fetched in the round (``fresh``) and the other is any page. The
    crawldb's pages are narrowed to those sharing a hash or a band with the round's
    (broadcast semi-joins: its bands are never shuffled), and only the pairs met are
    compared. The pairs met are cached and added to ``held``, for the caller to release."""
    from pyspark.sql import functions as F

    hashes = F.broadcast(fresh.select("content_hash").distinct())
    sharing = pages.join(hashes, "content_hash", "left_semi")
    met = fresh.select(F.col("url").alias("f_url"), "content_hash").join(
        sharing.select(F.col("url").alias("p_url"), "content_hash"), "content_hash"
    )
    met = met.select("f_url", "p_url", F.lit(True).alias("exact"), F.lit(False).alias("near"))
    fresh_bands = band_rows(fresh, conf)
    if fresh_bands is not None:
        keys = F.broadcast(fresh_bands.select("h").distinct())
        page_bands = band_rows(pages, conf).join(keys, "h", "left_semi")
        banded = meetings(fresh_bands, page_bands, conf).withColumn("exact", F.lit(False))
        met = met.unionByName(banded)
    met = met.where(F.col("f_url") != F.col("p_url"))
    flags = [F.max("exact").alias("exact"), F.max("near").alias("near")]
    # Few pairs, read twice (their pages, then the pairs): kept rather than met twice.
    met = met.groupBy("f_url", "p_url").agg(*flags).cache()
    held.append(met)  # released by the caller once the verdicts are written
    urls = met.select(F.col("f_url").alias("url")).unionByName(
        met.select(F.col("p_url").alias("url"))
    )
    # The round meets few pages: only those are looked up, without a shuffle of all.
    return judged_pairs(met, pages.join(F.broadcast(urls.distinct()), "url", "left_semi"), conf)


def judged_pairs(met, pages, conf):
    """``(url, kept)`` of the pairs ``met`` (``f_url``, ``p_url``, ``exact``, ``near``)
    that are duplicates: the same body, SimHashes found near, or sketches that resemble;
    of each, the worse-ranked page with the other's key (``pages``: at least the pages
    met)."""
    from pyspark.sql import functions as F

    prints = pages.select("url", "minhash", keep_key().alias("key"))
    f, p = prints.alias("f"), prints.alias("p")
    pairs = (
        met.join(f, F.col("f_url") == F.col("f.url"))
        .join(p, F.col("p_url") == F.col("p.url"))
        .select(
            "f_url",
            "p_url",
            "exact",
            "near",
            F.col("f.key").alias("f_key"),
            F.col("p.key").alias("p_key"),
            F.col("f.minhash").alias("minhash"),
            F.col("p.minhash").alias("k_minhash"),
        )
    )
    decided = F.col("exact") | F.col("near")
    resemble = sketches_resemble(conf)
    # CASE WHEN: the sketches are compared only for the pairs not decided already.
    matched = pairs.where(
        decided if resemble is None else F.when(decided, True).otherwise(resemble)
    )
    fresh_worse = F.col("p_key") < F.col("f_key")
    return matched.select(
        F.when(fresh_worse, F.col("f_url")).otherwise(F.col("p_url")).alias("url"),
        F.when(fresh_worse, F.col("p_key")).otherwise(F.col("f_key")).alias("kept"),
    )


def round_verdicts(pages, segment: str, conf, held: list):
    """``(found, restored)`` of the round's pass: ``(url, duplicate_of)`` of the pages to
    mark, ``url`` of the round's pages no longer duplicates. ``pages``: the crawldb's
    content pages (``PAGE_COLUMNS``) as they are after the round's update; ``held``
    gets the frames cached on the way, which the caller releases."""
    from pyspark.sql import functions as F

    canonical = canonical_duplicates(pages) if conf["dedup.canonical"] else None
    # As in the full pass: a page that is a duplicate of its canonical is not compared.
    by_content = pages if canonical is None else pages.join(canonical, "url", "left_anti")
    fresh = by_content.where(F.col("segment") == segment)
    best = (
        round_pairs(fresh, by_content, conf, held).groupBy("url").agg(F.min("kept").alias("kept"))
    )
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
        states.join(F.broadcast(found), "url")
        .where((F.col("_segment") == segment) | (F.col("status") != st.DUPLICATE))
        .select("url", "duplicate_of")
    )
    restored = (
        pages.where((F.col("segment") == segment) & (F.col("status") == st.DUPLICATE))
        .join(found, "url", "left_anti")
        .select("url")
    )
    return found, restored
