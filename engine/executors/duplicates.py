"""The duplicate rules (``crawldb.duplicates``) run where the pages are: in the driver
on the whole table for a small crawldb, or by Spark's tasks for a large one, each rule
on the rows of its key brought together by a shuffle (``repartition(key)``, then
``mapInArrow``). The rules are the same functions either way; only the grouping is the
executor's. The verdicts come back to the driver as one Arrow table
(``crawldb.duplicates.FINAL_DDL``): a page a row at most, only pages with a verdict.
"""

from __future__ import annotations

from functools import partial, reduce

from crawldb import duplicate_meetings as meetings
from crawldb import duplicates
from crawldb.duplicate_keys import KEY_DDL, PAGE_COLUMNS, PAGE_DDL, probe_keys
from engine.tables.arrow import ddl_schemas
from lib import vocabulary as st

CONTENT_STATUSES = (st.FETCHED, st.NOTMODIFIED, st.DUPLICATE)
PROBE_DDL = f"{PAGE_DDL}, {KEY_DDL}"


def content_condition():
    """Whether a crawldb row is a page with content: fetched, not modified, or a
    duplicate, with a body hash."""
    from pyspark.sql import functions as F

    status = F.col("status").isin(*CONTENT_STATUSES)
    return status & F.col("content_hash").isNotNull()


def content_pages(crawldb):
    """The crawldb's pages with content (``content_condition``)."""
    return crawldb.where(content_condition())


def page_frame(frame, fresh):
    """The rules' page rows (``PAGE_DDL``) of crawldb rows: times in epoch ms, ``fresh``
    a column (the page is of the round)."""
    from pyspark.sql import functions as F

    millis = F.col("last_fetch_time")
    if dict(frame.dtypes)["last_fetch_time"] == "timestamp":
        millis = F.unix_millis("last_fetch_time")
    columns = [millis.alias(c) if c == "last_fetch_time" else F.col(c) for c in PAGE_COLUMNS]
    return frame.select(*columns, F.coalesce(fresh, F.lit(False)).alias("fresh"))


def verdicts(pages, conf: dict, in_driver: bool, narrow: bool, fresh_at_most=None):
    """The verdicts (``FINAL_DDL``, an Arrow table) of ``pages`` (a frame of
    ``page_frame``): in the driver over all the pages collected (``in_driver``); else,
    for a round (``narrow``) of up to ``crawl.dedup.driver.round`` pages, in the driver
    over the pages its verdicts depend on (``met_pages``); else by Spark's tasks, the
    key rows no page of the round wants left out before the shuffle when ``narrow``.
    ``fresh_at_most``: a bound of the round's pages known without a count (its fetches),
    or None."""
    if in_driver:
        return duplicates.round_verdicts(pages.toArrow(), conf)
    if narrow and _round_within(pages, conf["crawl.dedup.driver.round"], fresh_at_most):
        return duplicates.round_verdicts(met_pages(pages, conf), conf)
    return spark_verdicts(pages, conf, narrow)


def _round_within(pages, limit: int, fresh_at_most: int | None) -> bool:
    """Whether the round's pages are at most ``limit``: counted only when the bound
    given does not already tell."""
    if fresh_at_most is not None and fresh_at_most <= limit:
        return True
    return pages.where(pages.fresh).count() <= limit


def met_pages(pages, conf: dict):
    """The pages (an Arrow table of ``PAGE_DDL``) the round's verdicts depend on
    (``crawldb.duplicate_meetings``), found by Spark's tasks and collected: those holding
    a key the round wants, then, with ``dedup.canonical``, the canonical groups of
    those; each once."""
    import pyarrow as pa

    spark = pages.sparkSession
    wanted = spark.sparkContext.broadcast(wanted_keys(pages, conf))
    met = pages.mapInArrow(partial(_met_task, conf, wanted), pages.schema).toArrow()
    wanted.destroy()
    if conf["dedup.canonical"]:
        named, groups = canonical_groups(pages, met)
        met = pa.concat_tables([met, groups.toArrow().cast(met.schema)])
        named.destroy()
    return meetings.each_once(met)


def spark_verdicts(pages, conf: dict, narrow: bool):
    """``verdicts`` by Spark's tasks. Narrowed, only the key rows of the keys the
    round's pages want leave the tasks that make them, and only the pages met, the
    round's and the canonicals they name take part in the canonical rule."""
    from pyspark.sql import functions as F

    spark = pages.sparkSession
    wanted = spark.sparkContext.broadcast(wanted_keys(pages, conf)) if narrow else None
    probes = pages.mapInArrow(partial(_probe_task, conf, wanted, _schema(PROBE_DDL)), PROBE_DDL)
    if narrow:  # few rows, read twice (the canonicals named, the content rule): kept
        probes = probes.localCheckpoint(eager=True)
    found = []
    if conf["dedup.canonical"]:
        canonical = _canonical(pages, probes if narrow else None)
        probes = probes.join(F.broadcast(canonical.select("url")), "url", "left_anti")
        found.append(canonical.mapInArrow(_task(duplicates.canonical_found, V_DDL), V_DDL))
    # A key of one row gives no verdict: only keys shared are shuffled with their pages.
    shared = probes.groupBy("k").count().where(F.col("count") > 1).select("k")
    probes = probes.join(shared, "k", "left_semi").repartition("k")
    found.append(probes.mapInArrow(partial(_content_task, conf, _schema(V_DDL)), V_DDL))
    # Restore candidates are of the round: the other pages stay out of the task.
    restore = _task(duplicates.restore_candidates, V_DDL)
    found.append(pages.where(F.col("fresh")).mapInArrow(restore, V_DDL))
    rows = reduce(lambda a, b: a.unionByName(b), found).repartition("url")
    final = _task(duplicates.final_verdicts, FINAL_DDL)
    found = rows.mapInArrow(final, FINAL_DDL).toArrow()
    if wanted is not None:
        wanted.destroy()
    return found


def _canonical(pages, probes):
    """The canonical verdicts (``CANONICAL_DDL``) of the pages, checkpointed; with
    ``probes`` (narrowed), only those naming or named by a page met (the rows keyed by
    such a URL are whole: the page of that URL, and those naming it)."""

    pages = pages.select("url", "canonical", "status", "duplicate_of", "fresh")
    named = None
    if probes is not None:
        named, pages = canonical_groups(
            pages, probes.select("url", "canonical").distinct().toArrow()
        )
    rows = pages.mapInArrow(_task(duplicates.canonical_rows, ROW_DDL), ROW_DDL)
    if named is not None:
        rows = rows.mapInArrow(partial(_named_task, named), ROW_DDL).distinct()
    verdicts = _task(duplicates.canonical_verdicts, CANONICAL_DDL)
    canonical = rows.repartition("k").mapInArrow(verdicts, CANONICAL_DDL)
    canonical = canonical.localCheckpoint(eager=True)  # read twice
    if named is not None:
        named.destroy()
    return canonical


def canonical_groups(pages, met):
    """``(named, groups)``: the URLs the pages ``met`` (an Arrow table) have or name as
    canonical, broadcast, and the pages of ``pages`` in their canonical groups
    (``crawldb.duplicate_meetings.in_canonical_groups``, by Spark's tasks)."""
    named = pages.sparkSession.sparkContext.broadcast(meetings.named_urls(met))
    return named, pages.mapInArrow(partial(_groups_task, named), pages.schema)


def wanted_keys(pages, conf: dict):
    """The distinct keys the round's pages want, collected (a sorted numpy array)."""
    import numpy as np

    fresh = pages.where(pages.fresh).mapInArrow(partial(_wanted_task, conf), "k BIGINT")
    return meetings.unique_keys(np.asarray(fresh.toArrow().column("k"), dtype=np.int64))


ROW_DDL, V_DDL = duplicates.CANONICAL_ROW_DDL, duplicates.VERDICT_DDL
CANONICAL_DDL, FINAL_DDL = duplicates.CANONICAL_DDL, duplicates.FINAL_DDL


def _schema(ddl: str):
    """The Arrow schema of a DDL's rows, made in the driver (a task has no session)."""
    return ddl_schemas(ddl)[1]


def _task(rule, ddl: str):
    """The Arrow task running ``rule`` on a partition, its rows cast to ``ddl``'s."""
    return partial(_rule_task, rule, _schema(ddl))


def _whole(batches):
    """A partition's batches as one table, None for none."""
    import pyarrow as pa

    batches = list(batches)
    return pa.Table.from_batches(batches) if batches else None


def _rule_task(rule, schema, batches):
    """Arrow task: ``rule`` over the partition's rows (whole keys, as shuffled)."""
    table = _whole(batches)
    if table is not None:
        yield from rule(table).cast(schema).to_batches()


def _probe_task(conf: dict, wanted, schema, batches):
    """Arrow task: a page row for each of its keys (``probe_keys``), with the key; only
    the keys of ``wanted`` (a broadcast sorted array; None: all)."""
    import pyarrow as pa

    keys = None if wanted is None else meetings.KeySet(wanted.value)
    for batch in batches:
        pages = pa.Table.from_batches([batch])
        k, wants, offers, index = probe_keys(pages, conf)
        if keys is not None:
            kept = keys.holds(k)
            k, wants, offers, index = k[kept], wants[kept], offers[kept], index[kept]
        rows = pages.take(index)
        for name, values in (("k", k), ("wants", wants), ("offers", offers)):
            rows = rows.append_column(name, pa.array(values))
        yield from rows.cast(schema).to_batches()


def _met_task(conf: dict, wanted, batches):
    """Arrow task: the pages holding a key of ``wanted`` (a broadcast sorted array)."""
    import pyarrow as pa

    keys = meetings.KeySet(wanted.value)
    for batch in batches:
        pages = pa.Table.from_batches([batch])
        yield from meetings.holding_wanted(pages, conf, keys).to_batches()


def _groups_task(named, batches):
    """Arrow task: the pages in the canonical groups of ``named`` (a broadcast array)."""
    import pyarrow as pa

    for batch in batches:
        pages = pa.Table.from_batches([batch])
        yield from meetings.in_canonical_groups(pages, named.value).to_batches()


def _named_task(named, batches):
    """Arrow task: the canonical rows keyed by one of ``named`` (a broadcast array)."""
    import pyarrow.compute as pc

    for batch in batches:
        yield batch.filter(pc.is_in(batch.column("k"), value_set=named.value))


def _wanted_task(conf: dict, batches):
    """Arrow task: the keys the round's pages want (``k``)."""
    import pyarrow as pa

    for batch in batches:
        keys = meetings.wanted_keys(pa.Table.from_batches([batch]), conf)
        yield pa.record_batch([pa.array(keys)], names=["k"])


def _content_task(conf: dict, schema, batches):
    """Arrow task: ``content_verdicts`` of the partition's key rows, each row its page."""
    import numpy as np

    rows = _whole(batches)
    if rows is None:
        return
    keys = tuple(np.asarray(rows.column(name)) for name in ("k", "wants", "offers"))
    keys += (np.arange(rows.num_rows),)
    pages = rows.drop_columns(["k", "wants", "offers"])
    yield from duplicates.content_verdicts(keys, pages, conf).cast(schema).to_batches()
