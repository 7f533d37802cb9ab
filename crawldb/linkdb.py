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
