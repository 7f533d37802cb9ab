"""The links a segment brings to a small crawldb, found and admitted in the driver: the
plain-Python twin of ``jobs.updatedb.links_frame`` and ``touched_rows`` for updatedb in
the driver (``engine.driver_update``). The same rules, the same functions where they are
plain Python already (``page_links``' outlink shares, ``crawldb.admission``), so both ways
give the crawldb the same rows (tests/test_driver_rounds.py compares them).
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

from crawldb import admission
from crawldb.links import entry_dates, page_links
from lib import vocabulary as st
from lib.url.normalize import UrlNormalizer, host_of
from lib.vocabulary import ORIGIN_PROBE

# The links as admission takes them (jobs.updatedb.LINKS_DDL's columns).
LINK_SCHEMA = pa.schema(
    [
        *(("url", pa.string()), ("dedup_key", pa.string()), ("host", pa.string())),
        *(("depth", pa.int32()), ("score", pa.float64()), ("redirect", pa.bool_())),
        *(("lastmod", pa.int64()), ("changefreq", pa.int32())),
    ]
)


class FoundLinks:
    """Per target URL, the links a round found to it, folded as ``links_frame``'s
    aggregation folds them: least depth, summed score, whether a redirect led to it,
    the newest lastmod and the shortest changefreq (each ignoring nulls, as Spark's)."""

    def __init__(self):
        self.by_url: dict[str, dict] = {}

    def add(self, url, depth, score, redirect, lastmod=None, changefreq=None) -> None:
        """Fold one link to ``url`` in."""
        if url is None:
            return
        new = {"depth": depth, "score": score, "redirect": redirect}
        new |= {"lastmod": lastmod, "changefreq": changefreq}
        seen = self.by_url.get(url)
        if seen is None:
            self.by_url[url] = new
            return
        seen["depth"] = _least(seen["depth"], depth)
        seen["score"] = _summed(seen["score"], score)
        seen["redirect"] = _greatest(seen["redirect"], redirect)
        seen["lastmod"] = _greatest(seen["lastmod"], lastmod)
        seen["changefreq"] = _least(seen["changefreq"], changefreq)

    def keyed(self, conf: dict, known: set) -> list[dict]:
        """The links (``jobs.updatedb.LINKS_DDL``'s columns) with their dedup key and
        host: computed for new URLs only, as admission and the merge read them for
        those alone (a known URL's row has its own)."""
        normalizer = UrlNormalizer(conf)
        keyed = []
        for url, link in self.by_url.items():
            if url in known:
                keyed.append({"url": url, "dedup_key": None, "host": None, **link})
            else:
                keyed.append(
                    {"url": url, "dedup_key": normalizer.dedup(url), "host": host_of(url), **link}
                )
        return keyed


def _least(a, b):
    return b if a is None else a if b is None else min(a, b)


def _greatest(a, b):
    return b if a is None else a if b is None else max(a, b)


def _summed(a, b):
    return b if a is None else a if b is None else a + b


def outlinks_of(conf: dict, found: FoundLinks, parsed: list[dict], pages: list[dict], skip: set):
    """Fold in the outlinks of the parsed pages that were fetched as pages (not probes)
    and are not ``skip`` (the crawldb's duplicates: their links were followed from the
    copy kept); ``pages``: the fetch table's page rows, probes included."""
    fetches = defaultdict(list)
    for fetch in pages:
        fetches[fetch["url"]].append(fetch)
    fetched = {fetch["url"] for fetch in pages if fetch["origin"] != ORIGIN_PROBE}
    for page in parsed:
        if page["url"] in skip or page["url"] not in fetched:
            continue
        outlinks = page["outlinks"] or []
        source = {
            "url": page["url"],
            "targets": [link["url"] for link in outlinks] if page["outlinks"] is not None else None,
            "link_metadata": [link.get("metadata") for link in outlinks] or None,
            "canonical": page["canonical"],
        }
        for fetch in fetches[page["url"]]:
            source |= {"host": fetch["host"], "depth": fetch["depth"], "score": fetch["score"]}
            targets, shares = page_links(conf, source)
            dated = entry_dates(source)
            for url, share in zip(targets, shares, strict=True):
                found.add(url, source["depth"] + 1, share, False, dated.get(url))


def redirects_and_sitemaps(conf: dict, found: FoundLinks, pages: list[dict], entries) -> None:
    """Fold in the redirect targets of the fetch table's pages and the segment's sitemap
    entries (``entries``: rows of the sitemaps table, or None): a sitemap entry is a link
    from its host's home page, scored like a seed times its priority (0.5 when none)."""
    for fetch in pages:
        if fetch["redirect_to"] is not None:
            found.add(fetch["redirect_to"], fetch["depth"], fetch["score"] or 0.0, True)
    injected = float(conf["db.score.injected"])
    for entry in entries or ():
        priority = 0.5 if entry["priority"] is None else entry["priority"]
        score = injected * priority
        found.add(entry["url"], 1, score, False, entry["lastmod"], entry["changefreq"])


def admitted(conf: dict, links: list[dict], known) -> tuple[list[dict], dict[str, int]]:
    """The links kept by admission (``crawldb.admission``; ``known``: an Arrow table of
    the crawldb's url, dedup_key and host) and the refused counts by reason."""
    import pyarrow.compute as pc

    table = pa.Table.from_pylist(links, schema=LINK_SCHEMA)
    decided = admission.admit(table, known, conf)
    reasons = decided.column("reason")
    kept = decided.filter(pc.is_null(reasons)).drop_columns(["reason"]).to_pylist()
    return kept, admission.counts(reasons)


def duplicate_urls(crawldb) -> set:
    """The URLs of the crawldb's duplicates (``crawldb``: an Arrow table of it)."""
    import pyarrow.compute as pc

    rows = crawldb.filter(pc.equal(crawldb.column("status"), st.DUPLICATE))
    return set(rows.column("url").to_pylist())
