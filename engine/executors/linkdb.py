"""updatedb's step that keeps the linkdb (``linkdb.enabled``): the round's inlinks
(``crawldb.linkdb``'s rule over the segment's parse table) merged into ``DIR/linkdb``
on (url, from_url). A link seen again gets its anchor and its last segment and time; a
new one is inserted with them as its first too. Where the crawldb is: in the driver
through delta-rs for a crawl whose crawldb the driver updates, else by Spark's tasks and
one Delta MERGE. A rerun of the step merges the same rows again: nothing is doubled.
"""

from __future__ import annotations

from functools import partial

from crawldb.linkdb import LINK_COLUMNS, inlink_rows
from crawldb.schema import PARSE
from engine.runtime.layout import DataDir, Segment
from engine.tables.delta_commits import delta_commit_message
from engine.tables.delta_files import is_delta_table, read_current
from engine.tables.driver_tables import arrow_table
from lib.clock import now_ms

LINKS_DDL = ", ".join(f"{name} STRING" for name in LINK_COLUMNS)
MATCH = "t.url = s.url AND t.from_url = s.from_url"
# What a link seen again takes from the round (its first segment and time stay).
UPDATED = ("from_host", "anchor", "last_segment", "last_seen")


def update_linkdb(spark, conf: dict, data: DataDir, segment: Segment, in_driver: bool) -> int:
    """Merge the segment's inlinks into the linkdb; returns how many the round gave."""
    if not is_delta_table(segment.table("parse")):
        return 0
    message = f"trawl updatedb linkdb segment={segment.name}"
    if in_driver:
        return _in_driver(conf, data, segment, message)
    return _by_spark(spark, conf, data, segment, message)


def _in_driver(conf: dict, data: DataDir, segment: Segment, message: str) -> int:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake
    from deltalake.transaction import CommitProperties

    links = inlink_rows(arrow_table(segment.table("parse"), PARSE, ["url", "outlinks"]), conf)
    if not links.num_rows:
        return 0
    seen = pa.array([now_ms() * 1000] * links.num_rows, pa.timestamp("us", tz="UTC"))
    names = pa.array([segment.name] * links.num_rows, pa.string())
    rows = links.append_column("first_segment", names).append_column("last_segment", names)
    rows = rows.append_column("first_seen", seen).append_column("last_seen", seen)
    committed = CommitProperties(custom_metadata={"userMetadata": message})
    if not is_delta_table(data.linkdb):
        write_deltalake(data.linkdb, rows, commit_properties=committed)
        return links.num_rows
    merge = DeltaTable(data.linkdb).merge(
        rows, MATCH, source_alias="s", target_alias="t", commit_properties=committed
    )
    merge.when_matched_update({name: f"s.{name}" for name in UPDATED})
    merge.when_not_matched_insert_all().execute()
    return links.num_rows


def _by_spark(spark, conf: dict, data: DataDir, segment: Segment, message: str) -> int:
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    pages = read_current(spark, segment.table("parse")).select("url", "outlinks")
    links = pages.mapInArrow(partial(_links_task, conf), LINKS_DDL)
    seen = F.current_timestamp()
    rows = links.select(
        *LINK_COLUMNS,
        F.lit(segment.name).alias("first_segment"),
        F.lit(segment.name).alias("last_segment"),
        seen.alias("first_seen"),
        seen.alias("last_seen"),
    ).dropDuplicates(["url", "from_url"])  # a MERGE takes one source row a key
    rows = rows.cache()
    count = rows.count()
    with delta_commit_message(spark, message):
        if not is_delta_table(data.linkdb):
            rows.write.format("delta").save(data.linkdb)
        elif count:
            target = DeltaTable.forPath(spark, data.linkdb).alias("t")
            merge = target.merge(rows.alias("s"), MATCH)
            merge = merge.whenMatchedUpdate(set={name: f"s.{name}" for name in UPDATED})
            merge.whenNotMatchedInsertAll().execute()
    rows.unpersist()
    return count


def _links_task(conf: dict, batches):
    """Task side: each batch of parsed pages as its inlink rows."""
    for batch in batches:
        yield from inlink_rows(batch, conf).to_batches()
