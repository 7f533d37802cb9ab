"""The linkdb's rule (Nutch's invertlinks): a round's parsed pages turned into inlink
rows, one per (target, source page), over Arrow, for either executor
(``engine.executors.linkdb``: delta-rs in the driver for a small crawl, Spark's tasks
for a large one).

A page's outlinks (the parse table's ``outlinks``: normalized and filtered, as the crawl
keeps them) each give a row: the target ``url``, the page ``from_url`` and its host,
the link's ``anchor``. A link of a page to itself gives none; with
``linkdb.ignore.internal.host`` (Nutch's ``db.ignore.internal.links``) neither does a
link within one host. A target a page links to twice keeps the first link's anchor
that is not empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lib.url.normalize import host_of

LINK_COLUMNS = ("url", "from_url", "from_host", "anchor")
KEY = ("url", "from_url")
# What a link seen again takes from the round (its first segment and time stay).
UPDATED = ("from_host", "anchor", "last_segment", "last_seen")
FIRSTS = ("first_segment", "first_seen")
LINKDB_COLUMNS = (*LINK_COLUMNS, "first_segment", "last_segment", "first_seen", "last_seen")


def inlink_rows(pages, conf: Mapping[str, Any]):
    """The inlink rows (``LINK_COLUMNS``) of ``pages`` (an Arrow table or batch with
    ``url`` and ``outlinks``), one per (url, from_url)."""
    import pyarrow as pa

    internal = conf["linkdb.ignore.internal.host"]
    rows: dict[tuple[str, str], dict] = {}
    urls, outlinks = pages.column("url").to_pylist(), pages.column("outlinks").to_pylist()
    for page, links in zip(urls, outlinks, strict=True):
        source_host = host_of(page)
        for link in links or ():
            target = link["url"]
            if target == page or (internal and host_of(target) == source_host):
                continue
            known = rows.get((target, page))
            if known is None:
                rows[(target, page)] = {
                    "url": target,
                    "from_url": page,
                    "from_host": source_host,
                    "anchor": link["anchor"] or "",
                }
            elif not known["anchor"]:
                known["anchor"] = link["anchor"] or ""
    schema = pa.schema([(name, pa.string()) for name in LINK_COLUMNS])
    return pa.Table.from_pylist(list(rows.values()), schema=schema)


def linkdb_schema():
    """Arrow schema of the linkdb's rows as stored (times as UTC microseconds)."""
    import pyarrow as pa

    kinds = {"first_seen": pa.timestamp("us", tz="UTC"), "last_seen": pa.timestamp("us", tz="UTC")}
    return pa.schema([(name, kinds.get(name, pa.string())) for name in LINKDB_COLUMNS])


def round_rows(links, segment: str, seen_us: int):
    """The round's inlink rows (``inlink_rows``') as linkdb rows: first and last seen in
    ``segment`` at ``seen_us`` (UTC microseconds)."""
    import pyarrow as pa

    count = links.num_rows
    names = pa.array([segment] * count, pa.string())
    seen = pa.array([seen_us] * count, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    added = {"first_segment": names, "last_segment": names, "first_seen": seen, "last_seen": seen}
    columns = [
        links.column(name) if name in LINK_COLUMNS else added[name] for name in LINKDB_COLUMNS
    ]
    return pa.Table.from_arrays(columns, schema=linkdb_schema())


def merged(old, new):
    """The linkdb rows ``old`` with the round's rows ``new`` (``round_rows``') merged in
    on (url, from_url): a link seen again takes the round's ``UPDATED`` columns and keeps
    its first segment and time, a new link is added, the other rows stay as they were.
    A key the round gives twice counts once (its first row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = linkdb_schema()
    new, old = first_per_key(new.cast(schema)), old.cast(schema)
    firsts = old.select([*KEY, *FIRSTS]).rename_columns([*KEY, *(f"old_{n}" for n in FIRSTS)])
    joined = new.join(firsts, list(KEY), join_type="left outer")
    columns = {name: joined.column(name) for name in LINKDB_COLUMNS}
    for name in FIRSTS:
        columns[name] = pc.coalesce(joined.column(f"old_{name}"), joined.column(name))
    seen = pa.Table.from_arrays([columns[name] for name in LINKDB_COLUMNS], schema=schema)
    kept = old.join(new.select(list(KEY)), list(KEY), join_type="left anti")
    return pa.concat_tables([kept.select(list(LINKDB_COLUMNS)), seen])


def first_per_key(rows):
    """``rows`` with one row for each (url, from_url): the first."""
    import numpy as np
    import pyarrow as pa

    if not rows.num_rows:
        return rows
    index = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    grouped = rows.append_column("_row", index).group_by(list(KEY), use_threads=False)
    firsts = grouped.aggregate([("_row", "min")]).column("_row_min").to_numpy()
    return rows.take(pa.array(np.sort(firsts)))
