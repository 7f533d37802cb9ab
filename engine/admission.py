"""Which newly found URLs enter the crawldb: the spider-trap defences of updatedb.

A link to a URL already in the crawldb is always kept (it may lower the URL's depth). A
new URL is refused, with the reason counted, when:

- ``depth``: it is deeper than ``db.max.depth`` links from a seed;
- ``duplicate_variant``: its dedup key (``lib.url.normalize.UrlNormalizer.dedup``) is already in
  the crawldb or taken by another new URL of this round; a redirect target is always
  kept, since it is what the site serves (so ``/a/`` -> 301 -> ``/a`` cannot loop);
- ``host_cap``: its host would hold more than ``db.max.urls.per.host`` URLs;
- ``pattern_cap``: its host would hold more than ``db.max.urls.per.pattern`` URLs of its
  pattern (``lib.url.traps``: calendars, session-id spaces, endless page counters).

Within a host, shallower and better-scored URLs are admitted first. ``crawldb.admission``
is the same rules in plain Python, for a round decided in the driver; tests/test_admission.py
checks that both give every link the same reason.
"""

from __future__ import annotations

from lib.url.traps import PATTERN_RULES


def pattern_column(column: str = "url"):
    """The URL pattern of ``lib.url.traps.url_pattern``, as a Spark SQL expression."""
    from pyspark.sql import functions as F

    expression = F.col(column)
    for regex, replacement in PATTERN_RULES:
        expression = F.regexp_replace(expression, regex, replacement.replace("$", "\\$"))
    return expression


def admit(links, crawldb, conf):
    """``links`` (url, dedup_key, host, depth, score, redirect) with a ``reason`` column:
    NULL for the rows to keep, else why the link is refused. One plan, no unions: each
    defence only counts the links no earlier defence refused."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    known = links.join(crawldb.select("url"), "url", "left_semi")
    new = links.join(crawldb.select("url"), "url", "left_anti")
    known_keys = crawldb.select(F.col("dedup_key"), F.lit(True).alias("_taken")).distinct()
    first_of_key = Window.partitionBy("dedup_key").orderBy(F.col("redirect").desc(), "depth", "url")
    max_depth = conf["db.max.depth"]
    tagged = (
        new.join(known_keys, "dedup_key", "left")
        .withColumn("_rank", F.row_number().over(first_of_key))
        .withColumn(
            "reason",
            F.when(F.lit(max_depth >= 0) & (F.col("depth") > max_depth), "depth").when(
                ~F.col("redirect") & (F.col("_taken").isNotNull() | (F.col("_rank") > 1)),
                "duplicate_variant",
            ),
        )
        .drop("_taken", "_rank")
    )
    tagged = _cap(tagged, crawldb, ["host"], conf["db.max.urls.per.host"], "host_cap")
    tagged = _cap(
        tagged.withColumn("pattern", pattern_column()),
        crawldb.withColumn("pattern", pattern_column()),
        ["host", "pattern"],
        conf["db.max.urls.per.pattern"],
        "pattern_cap",
    ).drop("pattern")
    return known.withColumn("reason", F.lit(None).cast("string")).unionByName(tagged)


def _cap(tagged, crawldb, keys: list[str], cap: int, reason: str):
    """Tag with ``reason`` the links not yet refused beyond ``cap`` URLs per ``keys``
    group, counting the crawldb's URLs of the group first."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if cap < 0:
        return tagged
    existing = crawldb.groupBy(*keys).agg(F.count("*").alias("_existing"))
    open_ = F.col("reason").isNull()
    # Refused links form their own window group, so they take no place under the cap.
    order = Window.partitionBy(*keys, open_).orderBy("depth", F.col("score").desc(), "url")
    beyond = F.row_number().over(order) + F.coalesce("_existing", F.lit(0)) > cap
    return (
        tagged.join(existing, keys, "left")
        .withColumn("reason", F.when(open_ & beyond, reason).otherwise(F.col("reason")))
        .drop("_existing")
    )
