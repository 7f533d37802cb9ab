"""The pages a round's duplicate verdicts depend on, out of a crawldb too large to
collect: the round's content pages, and the crawldb's pages that can meet one of them
or decide a canonical verdict, found in one scan of the crawldb's content pages.

Each page offers probe keys (its SHA-256, its MinHash bands and SimHash blocks, its URL,
the canonical it names, its segment) and the round's pages want the keys they can meet
on; the crawldb's pages whose keys are wanted (a broadcast semi-join of the exploded
keys: the crawldb is never shuffled) are collected with the round's, and the verdicts
found over them by ``crawldb.duplicates`` are those of the whole crawldb. Keys are
64-bit hashes: a collision only adds a page that the rules then leave alone.
"""

from __future__ import annotations

from engine.executors.duplicates import (
    PAGE_COLUMNS,
    content_condition,
    content_pages,
    minhash_band_hashes,
    simhash_blocks,
)


def replacing(changed, segment: str):
    """The changed rows that can replace a content page of the crawldb: content pages
    still, or fetched in the round (a page's status changes only by a fetch)."""
    from pyspark.sql import functions as F

    return changed.where(content_condition() | (F.col("segment") == segment))


def page_dicts(frame) -> list[dict]:
    """The frame's rows as dicts (``PAGE_COLUMNS``, times in ms), collected through Arrow."""
    return frame.toArrow().to_pylist()


def with_millis_fetch(frame):
    """``PAGE_COLUMNS`` of the frame, ``last_fetch_time`` as epoch ms."""
    from pyspark.sql import functions as F

    frame = frame.withColumn("last_fetch_time", F.unix_millis("last_fetch_time"))
    return frame.select(*PAGE_COLUMNS)


def block_keys(sketched, conf: dict) -> list:
    """The probe keys of a page's SimHash blocks, with whether its own sketch is kept
    (``sketched``: a column or a literal): two sketched pages meet on their MinHash
    bands only, so a sketched page of the round wants the blocks of unsketched pages."""
    from pyspark.sql import functions as F

    if conf["dedup.simhash.distance"] < 0:
        return []
    return [
        F.when(F.col("simhash").isNotNull(), F.xxhash64(F.lit(i), b, sketched))
        for i, b in enumerate(simhash_blocks())
    ]


def shared_keys(conf: dict) -> list:
    """Probe keys a page both offers and wants: its SHA-256 and its MinHash bands."""
    from pyspark.sql import functions as F

    keys = [F.xxhash64(F.lit("sha"), F.col("content_hash"))]
    if conf["dedup.minhash.threshold"] >= 0:
        keys += minhash_band_hashes()
    return keys


def sketched(conf: dict):
    """Whether a page's MinHash sketch takes part: kept, and MinHash on."""
    from pyspark.sql import functions as F

    if conf["dedup.minhash.threshold"] < 0:
        return F.lit(False)
    return F.col("minhash").isNotNull()


def offered_keys(conf: dict, segment: str):
    """The array of a crawldb page's probe keys (nulls for those it lacks)."""
    from pyspark.sql import functions as F

    keys = shared_keys(conf) + block_keys(sketched(conf), conf)
    keys.append(F.xxhash64(F.lit("segment"), F.col("segment")))
    if conf["dedup.canonical"]:
        keys.append(F.xxhash64(F.lit("url"), F.col("url")))
        keys.append(F.xxhash64(F.lit("canonical"), F.col("canonical")))
    return F.array(*keys)


def wanted_keys(fresh, conf: dict, segment: str):
    """``k``: the distinct probe keys the round's pages (``fresh``) can meet a crawldb
    page on, and the key of a crawldb page of the round's own segment."""
    from pyspark.sql import functions as F

    unsketched = block_keys(F.lit(False), conf)
    keys = shared_keys(conf) + unsketched
    # An unsketched page of the round meets sketched pages on SimHash blocks too.
    keys += [F.when(~sketched(conf), k) for k in block_keys(F.lit(True), conf)]
    if conf["dedup.canonical"]:
        keys.append(F.xxhash64(F.lit("url"), F.col("canonical")))
        keys.append(F.xxhash64(F.lit("canonical"), F.col("url")))
    wanted = fresh.select(F.explode(F.array(*keys)).alias("k"))
    own = fresh.sparkSession.range(1).select(
        F.xxhash64(F.lit("segment"), F.lit(segment)).alias("k")
    )
    return wanted.unionByName(own).where(F.col("k").isNotNull()).distinct()


def collected_pages(old, changed, segment: str) -> dict[str, dict]:
    """url -> page (``PAGE_COLUMNS``, times in ms, ``_new``: of the round) of every
    content page of the crawldb as the round leaves it, collected in one Spark job."""
    from pyspark.sql import functions as F

    was = content_pages(old).select(*PAGE_COLUMNS, F.lit(False).alias("_new"))
    now = with_millis_fetch(replacing(changed, segment))
    now = now.select("*", F.lit(True).alias("_new"), content_condition().alias("_c"))
    pages, gone = {}, set()
    for page in page_dicts(was.unionByName(now, allowMissingColumns=True)):
        content = page.pop("_c")
        if page["_new"] and not content:
            gone.add(page["url"])
        elif page["_new"] or page["url"] not in pages:  # the round's row replaces the old
            pages[page["url"]] = page
    return {url: page for url, page in pages.items() if url not in gone}


def met_pages(old, fresh, replaced, conf: dict, segment: str) -> list[dict]:
    """The content pages of ``old`` (times in ms) not ``replaced`` (a frame of ``url``)
    that offer a key the round's pages want: one scan, its matches collected."""
    from pyspark.sql import functions as F

    pages = content_pages(old).join(F.broadcast(replaced), "url", "left_anti")
    probes = pages.select(*PAGE_COLUMNS, F.explode(offered_keys(conf, segment)).alias("k"))
    wanted = F.broadcast(wanted_keys(fresh, conf, segment))
    return page_dicts(probes.join(wanted, "k", "left_semi").select(*PAGE_COLUMNS))


def narrowed_pages(old, changed, segment: str, conf: dict) -> dict[str, dict]:
    """url -> page (``PAGE_COLUMNS``, times in ms, ``_new``: of the round) of the
    round's content pages and of every crawldb page their verdicts depend on: pages
    meeting one of them, pages naming one as canonical or named by one, and the
    canonical named by any of those (whether it is a canonical duplicate)."""
    from pyspark.sql import functions as F

    rows = replacing(changed, segment)
    round_rows = page_dicts(with_millis_fetch(rows).withColumn("_c", content_condition()))
    pages = {r["url"]: {**r, "_new": True} for r in round_rows if r.pop("_c")}
    fresh = rows.where(content_condition())
    for page in met_pages(old, fresh, rows.select("url"), conf, segment):
        pages.setdefault(page["url"], {**page, "_new": False})
    named = {p["canonical"] for p in pages.values() if p["canonical"]} - set(pages)
    named -= {r["url"] for r in round_rows}
    if conf["dedup.canonical"] and named:
        targets = changed.sparkSession.createDataFrame([(url,) for url in named], "url STRING")
        for page in page_dicts(
            content_pages(old).join(F.broadcast(targets), "url", "left_semi").select(*PAGE_COLUMNS)
        ):
            pages[page["url"]] = {**page, "_new": False}
    return pages
