"""The round's duplicate verdicts in plain Python, found in the driver over the pages
they depend on: a small crawldb's content pages (``crawl.dedup.driver.urls``), or a
round's pages and the crawldb's pages they meet (``engine.round_candidates``). The rules
are those of ``jobs/dedup.py``'s docstring, as ``engine.duplicates.round_verdicts``
applies them with Spark. Pages are dicts of ``PAGE_COLUMNS``.

Pages meet on the same SHA-256, a MinHash band (both sketched) or a SimHash block (one
of them without a sketch, and the two within the distance); a pair met is a duplicate
pair when the bodies are the same, the SimHashes within the distance, or the sketches
resemble. Of each pair the page with the greater keep key becomes a duplicate of the
best page it duplicates.
"""

from __future__ import annotations

import math
import struct

from lib import vocabulary as st
from lib.content.fingerprint import MINHASH_BANDS, MINHASH_ROWS, MINHASH_SIZE

BLOCKS, BLOCK_BITS = 4, 16


def keep_key(page: dict) -> tuple:
    """Sorts like ``engine.duplicates.keep_order``: the smaller key is the copy kept
    (highest score, shortest URL, earliest fetch, URL; a missing value first, as
    Spark orders nulls)."""
    score, fetched = page["score"], page["last_fetch_time"]
    return (
        (score is not None, -score if score is not None else 0.0),
        len(page["url"]),
        (fetched is not None, fetched if fetched is not None else 0),
        page["url"],
    )


# A MinHash sketch's bands as unsigned integers, in one call.
BANDS_OF_SKETCH = struct.Struct(f">{MINHASH_BANDS}{ {4: 'I', 8: 'Q'}[MINHASH_ROWS] }")
# Band keys are the band's number above its 64-bit value: SimHash block i is numbered
# 2i, or 2i + 1 for a page whose sketch takes part; MinHash band j, 2 * BLOCKS + j.
FIRST_BAND = 2 * BLOCKS


def sketched(page: dict, conf: dict) -> bool:
    """Whether the page's MinHash sketch takes part: kept, and MinHash on."""
    return conf["dedup.minhash.threshold"] >= 0 and page["minhash"] is not None


def block_keys(page: dict, conf: dict, flag: bool) -> list[int]:
    """The keys of the page's SimHash blocks (Manku et al.), numbered with ``flag``."""
    if conf["dedup.simhash.distance"] < 0 or page["simhash"] is None:
        return []
    mask, simhash = (1 << BLOCK_BITS) - 1, page["simhash"]
    return [(2 * i + flag) << 64 | (simhash >> (i * BLOCK_BITS)) & mask for i in range(BLOCKS)]


def sketch_keys(page: dict) -> list[int]:
    """The keys of the page's MinHash bands."""
    values = BANDS_OF_SKETCH.unpack(bytes(page["minhash"]))
    return [(FIRST_BAND + j) << 64 | value for j, value in enumerate(values)]


def offered_keys(page: dict, conf: dict) -> list[int]:
    """The keys a page can be met on: its blocks, numbered with whether it is sketched,
    and its bands."""
    own = sketched(page, conf)
    return block_keys(page, conf, own) + (sketch_keys(page) if own else [])


def wanted_keys(page: dict, conf: dict) -> list[int]:
    """The keys a page of the round meets others on: the blocks of unsketched pages, and
    its bands if it is sketched, else the blocks of sketched pages too (two sketched
    pages meet on their MinHash bands only)."""
    keys = block_keys(page, conf, False)
    if sketched(page, conf):
        return keys + sketch_keys(page)
    return keys + block_keys(page, conf, True)


class Judge:
    """Whether two pages met are duplicates, by the configuration's distances."""

    def __init__(self, conf: dict):
        self.distance = conf["dedup.simhash.distance"]
        threshold = conf["dedup.minhash.threshold"]
        self.sketches = threshold >= 0
        # Sketch bytes agree with probability J + (1 - J) / 256 (b-bit MinHash).
        self.needed = math.ceil(MINHASH_SIZE * (threshold * 255 / 256 + 1 / 256))

    def near(self, a: dict, b: dict) -> bool:
        """SimHashes within the distance."""
        if self.distance < 0 or a["simhash"] is None or b["simhash"] is None:
            return False
        return bin((a["simhash"] ^ b["simhash"]) & (2**64 - 1)).count("1") <= self.distance

    def resemble(self, a: dict, b: dict) -> bool:
        """Sketches that estimate a resemblance of at least the threshold."""
        if not self.sketches or a["minhash"] is None or b["minhash"] is None:
            return False
        agree = sum(
            1 for x, y in zip(bytes(a["minhash"]), bytes(b["minhash"]), strict=True) if x == y
        )
        return agree >= self.needed

    def duplicates(self, a: dict, b: dict, exact: bool, kinds: set) -> bool:
        """Whether ``a`` and ``b``, met by SHA-256 (``exact``) or by bands of ``kinds``
        (``"m"``, ``"s"``), are duplicates: pages met on SimHash blocks only must be
        near, as the sketches are compared only for pages met on a MinHash band."""
        if exact or self.near(a, b):
            return True
        return "m" in kinds and self.resemble(a, b)


def canonical_verdicts(pages: dict[str, dict]) -> dict[str, str]:
    """url -> its canonical, for pages naming a canonical that is a page naming none."""
    return {
        url: page["canonical"]
        for url, page in pages.items()
        if page["canonical"] is not None
        and page["canonical"] in pages
        and pages[page["canonical"]]["canonical"] is None
    }


def offering(offered, wanted: set):
    """``lookup(key)``: the urls offering a ``wanted`` key, from ``offered`` (url, its
    keys). A list is made only where a second page offers a key: most are one page's."""
    first, shared = {}, {}
    for url, keys in offered:
        for key in keys:
            if key in wanted:
                other = first.setdefault(key, url)
                if other is not url:
                    shared.setdefault(key, [other]).append(url)

    def lookup(key) -> list[str]:
        return shared.get(key) or ([first[key]] if key in first else [])

    return lookup


def meetings(fresh: list[dict], pages: dict[str, dict], conf: dict) -> dict:
    """(fresh url, other url) -> (exact, band kinds: "m", "s") of the pairs met: a page
    of the round and any page sharing its SHA-256 or a band (SimHash blocks only where
    one of the two has no sketch)."""
    hashes = ((url, (page["content_hash"],)) for url, page in pages.items())
    by_hash = offering(hashes, {page["content_hash"] for page in fresh})
    wants = {page["url"]: wanted_keys(page, conf) for page in fresh}
    offered = ((url, offered_keys(page, conf)) for url, page in pages.items())
    by_band = offering(offered, {key for keys in wants.values() for key in keys})
    met: dict[tuple, tuple] = {}
    for page in fresh:
        url = page["url"]
        for other in by_hash(page["content_hash"]):
            if other != url:
                met[(url, other)] = (True, set())
        for key in wants[url]:
            kind = "m" if key >> 64 >= FIRST_BAND else "s"
            for other in by_band(key):
                if other == url:
                    continue
                pair = (url, other)
                if pair not in met:
                    met[pair] = (False, set())
                met[pair][1].add(kind)
    return met


def best_copies(fresh: list[dict], pages: dict[str, dict], conf: dict) -> dict[str, str]:
    """url -> the best page it duplicates, for every page worse than a page it
    duplicates where one of the two is of the round."""
    judge, best = Judge(conf), {}
    for (a_url, b_url), (exact, kinds) in meetings(fresh, pages, conf).items():
        a, b = pages[a_url], pages[b_url]
        if not judge.duplicates(a, b, exact, kinds):
            continue
        worse, better = (a, b) if keep_key(b) < keep_key(a) else (b, a)
        if worse["url"] not in best or keep_key(better) < keep_key(pages[best[worse["url"]]]):
            best[worse["url"]] = better["url"]
    return best


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
