"""The links a segment brings to a small crawldb, found and admitted in the driver
(``engine.executors.driver_update``) by the rules ``jobs.updatedb`` runs in Spark's tasks:
``crawldb.links`` makes and folds them, ``crawldb.admission`` admits them.
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

from crawldb import admission, links
from lib.url.normalize import UrlNormalizer

# The columns of the fetch table's rows and of the sitemap entries that links are made of.
HOP_SCHEMA = pa.schema(
    [("url", pa.string()), ("redirect_to", pa.string()), ("depth", pa.int32())]
    + [("score", pa.float64())]
)
# Parsed pages whose links are made at once: their outlinks are Python objects meanwhile.
SLICE_PAGES = 5_000
ENTRY_SCHEMA = pa.schema(
    [("url", pa.string()), ("lastmod", pa.int64()), ("changefreq", pa.int32())]
    + [("priority", pa.float64())]
)


def found_links(conf: dict, crawldb, parsed, pages, entries):
    """The round's links (``crawldb.links``: the outlinks of the parsed pages, each
    joined with its fetch rows and crawldb status, ``followed`` deciding; the redirects'
    targets; the sitemap ``entries``, rows or None), folded per URL, with the dedup key
    and host of the URLs the crawldb does not hold (``crawldb``: an Arrow table of it;
    ``parsed``: the parse table's rows, an Arrow table, read ``SLICE_PAGES`` at a time;
    ``pages``: the fetch table's page rows)."""
    fetches = defaultdict(list)
    for fetch in pages:
        fetches[fetch["url"]].append(fetch)
    statuses = statuses_of(crawldb, parsed.column("url").to_pylist())
    found = []
    for start in range(0, parsed.num_rows, SLICE_PAGES):
        rows = parsed.slice(start, SLICE_PAGES).select(["url", "outlinks", "canonical"])
        found.append(links.outlinks(conf, link_sources(rows.to_pylist(), fetches, statuses)))
    hops = pa.Table.from_pylist(
        [{k: fetch[k] for k in ("url", "redirect_to", "depth", "score")} for fetch in pages],
        schema=HOP_SCHEMA,
    )
    found.append(links.redirect_links(hops))
    if entries is not None:
        found.append(links.sitemap_links(pa.Table.from_pylist(entries, schema=ENTRY_SCHEMA), conf))
    folded = links.fold(pa.concat_tables(found))
    return links.keyed(folded, UrlNormalizer(conf), crawldb.column("url").combine_chunks())


def link_sources(parsed: list[dict], fetches: dict, statuses: dict) -> list[dict]:
    """The parsed pages as ``crawldb.links.outlinks`` takes them: each joined with each
    of its fetch rows (``fetches``: url -> rows) and its crawldb status."""
    sources = []
    for page in parsed:
        outlinks = page["outlinks"] or []
        source = {
            "url": page["url"],
            "targets": [link["url"] for link in outlinks] if page["outlinks"] is not None else None,
            "link_metadata": [link.get("metadata") for link in outlinks] or None,
            "canonical": page["canonical"],
            "old_status": statuses.get(page["url"]),
        }
        for fetch in fetches[page["url"]]:
            sources.append(source | {k: fetch[k] for k in ("host", "depth", "score", "origin")})
    return sources


def statuses_of(crawldb, urls: list[str]) -> dict[str, str]:
    """url -> crawldb status of those of ``urls`` it holds (``crawldb``: an Arrow table)."""
    import pyarrow.compute as pc

    held = crawldb.filter(pc.is_in(crawldb.column("url"), value_set=pa.array(urls, pa.string())))
    return dict(zip(held.column("url").to_pylist(), held.column("status").to_pylist(), strict=True))


def admitted(conf: dict, found, known) -> tuple:
    """The links (``found_links``') kept by admission (``crawldb.admission``; ``known``:
    an Arrow table of the crawldb's url, dedup_key and host), an Arrow table, and the
    refused counts by reason."""
    import pyarrow.compute as pc

    decided = admission.admit(found, known, conf)
    reasons = decided.column("reason")
    kept = decided.filter(pc.is_null(reasons)).drop_columns(["reason"])
    return kept, admission.counts(reasons)
