"""updatedb's step that keeps the linkdb (``linkdb.enabled``): the round's inlinks
(``crawldb.linkdb``'s rule over the segment's parse table) merged into ``DIR/linkdb``
on (url, from_url) by ``crawldb.linkdb.merged``: a link seen again gets its anchor and
its last segment and time; a new one is inserted with them as its first too. The files
holding one of the round's links are written again with the merged rows, in one Delta
commit: in the driver for a crawl whose crawldb the driver updates
(``engine.tables.driver_rewrite.merge_in_driver``), else by Spark's tasks, each merging
and writing the links it holds (``engine.tables.file_rewrite.merge_by_tasks``), not by
a Delta MERGE (a dozen Spark jobs of its own a round). A rerun of the step merges the
same rows again: nothing is doubled.
"""

from __future__ import annotations

from functools import partial

from crawldb.linkdb import KEY, LINKDB_COLUMNS, inlink_rows, linkdb_schema, merged, round_rows
from crawldb.schema import PARSE
from engine.runtime.layout import DataDir, Segment
from engine.tables.delta_files import is_delta_table, read_current
from engine.tables.driver_rewrite import merge_in_driver
from engine.tables.driver_tables import arrow_table
from engine.tables.file_rewrite import merge_by_tasks
from lib.clock import now_ms

LINKDB_DDL = ", ".join(
    f"{name} {'TIMESTAMP' if name.endswith('_seen') else 'STRING'}" for name in LINKDB_COLUMNS
)


def update_linkdb(spark, conf: dict, data: DataDir, segment: Segment, in_driver: bool) -> int:
    """Merge the segment's inlinks into the linkdb; returns how many the round gave."""
    if not is_delta_table(segment.table("parse")):
        return 0
    message = f"trawl updatedb linkdb segment={segment.name}"
    seen_us = now_ms() * 1000
    if in_driver:
        parsed = arrow_table(segment.table("parse"), PARSE, ["url", "outlinks"])
        rows = round_rows(inlink_rows(parsed, conf), segment.name, seen_us)
        if rows.num_rows:
            merge_in_driver(spark, data.storage, data.linkdb, rows, list(KEY), merged, message)
        return rows.num_rows
    pages = read_current(spark, segment.table("parse")).select("url", "outlinks")
    task = partial(_links_task, conf, segment.name, seen_us)
    # Cached: read for the files holding a link, then merged into them.
    rows = pages.mapInArrow(task, LINKDB_DDL).cache()
    schema = linkdb_schema()
    given = merge_by_tasks(
        spark, data.linkdb, data.storage, rows, list(KEY), merged, schema, message
    )
    rows.unpersist()
    return given


def _links_task(conf: dict, segment: str, seen_us: int, batches):
    """Task side: each batch of parsed pages as its linkdb rows of the round."""
    for batch in batches:
        yield from round_rows(inlink_rows(batch, conf), segment, seen_us).to_batches()
