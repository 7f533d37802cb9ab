"""The round's duplicate verdicts without Spark, found in the driver over the pages
they depend on: a small crawldb's content pages (``crawl.dedup.driver.urls``), or a
round's pages and the crawldb's pages they meet (``engine.executors.round_candidates``). The rules
are those of ``jobs/dedup.py``'s docstring, as ``engine.executors.duplicates.round_verdicts``
applies them with Spark. Pages are dicts of ``PAGE_COLUMNS``.

Pages meet on the same SHA-256, a MinHash band (both sketched) or a SimHash block (one
of them without a sketch, and the two within the distance); a pair met is a duplicate
pair when the bodies are the same, the SimHashes within the distance, or the sketches
resemble. Of each pair the page with the greater keep key becomes a duplicate of the
best page it duplicates. The pairs are found in columns (``crawldb.duplicate_pairs``).
"""

from __future__ import annotations

from crawldb.duplicate_pairs import round_pairs
from lib import vocabulary as st


def keep_key(page: dict) -> tuple:
    """Sorts like ``engine.executors.duplicates.keep_order``: the smaller key is the copy kept
    (highest score, shortest URL, earliest fetch, URL; a missing value first, as
    Spark orders nulls)."""
    score, fetched = page["score"], page["last_fetch_time"]
    return (
        (score is not None, -score if score is not None else 0.0),
        len(page["url"]),
        (fetched is not None, fetched if fetched is not None else 0),
        page["url"],
    )


def canonical_verdicts(pages: dict[str, dict]) -> dict[str, str]:
    """url -> its canonical, for pages naming a canonical that is a page naming none."""
    return {
        url: page["canonical"]
        for url, page in pages.items()
        if page["canonical"] is not None
        and page["canonical"] in pages
        and pages[page["canonical"]]["canonical"] is None
    }


def best_copies(fresh: list[dict], pages: dict[str, dict], conf: dict) -> dict[str, str]:
    """url -> the best page it duplicates, for every page worse than a page it
    duplicates where one of the two is of the round (``fresh``: those of ``pages``)."""
    import numpy as np
    import pyarrow as pa

    urls, a, b = round_pairs(pages, {page["url"] for page in fresh}, conf)
    # Ranked by keep key: the pages of a duplicate pair alone (a few of them, mostly).
    order = sorted(np.unique(np.concatenate([a, b])), key=lambda i: keep_key(pages[urls[i]]))
    rank = np.zeros(len(urls), dtype=np.int64)
    rank[order] = np.arange(len(order))
    worse = np.where(rank[b] < rank[a], a, b)
    better = np.minimum(rank[a], rank[b])
    best = pa.table({"worse": worse, "better": better}).group_by("worse")
    best = best.aggregate([("better", "min")])
    kept = zip(best.column("worse").to_pylist(), best.column("better_min").to_pylist(), strict=True)
    return {urls[w]: urls[order[r]] for w, r in kept}


def round_verdicts(pages: dict[str, dict], segment: str, conf: dict):
    """``(found, restored)``: url -> duplicate_of of the pages to mark, and the urls of
    the round's pages no longer duplicates (``pages``: url -> page, every content page
    of the crawldb as the round leaves it)."""
    canonical = canonical_verdicts(pages) if conf["dedup.canonical"] else {}
    by_content = {url: page for url, page in pages.items() if url not in canonical}
    fresh = [page for page in by_content.values() if page["segment"] == segment]
    found = best_copies(fresh, by_content, conf)
    if conf["dedup.canonical"]:
        touched = {url for url, page in pages.items() if page["segment"] == segment}
        found.update(
            (url, target)
            for url, target in canonical.items()
            if url in touched or target in touched
        )
    found = {
        url: target
        for url, target in found.items()
        if pages[url]["segment"] == segment or pages[url]["status"] != st.DUPLICATE
    }
    restored = [
        url
        for url, page in pages.items()
        if page["segment"] == segment and page["status"] == st.DUPLICATE and url not in found
    ]
    return found, restored
