"""The round's duplicate verdicts in plain Python, for a crawldb small enough to hold in
the driver (``crawl.dedup.driver.urls``): the rules of ``jobs/dedup.py``'s docstring,
as ``engine.duplicates.round_verdicts`` applies them with Spark, in a few milliseconds
instead of some ninety small Spark jobs. Pages are dicts of ``PAGE_COLUMNS``.

Pages meet on the same SHA-256, a MinHash band (both sketched) or a SimHash block (one
of them without a sketch, and the two within the distance); a pair met is a duplicate
pair when the bodies are the same, the SimHashes within the distance, or the sketches
resemble. Of each pair the page with the greater keep key becomes a duplicate of the
best page it duplicates.
"""

from __future__ import annotations

import math
from collections import defaultdict

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


def band_keys(page: dict, conf: dict) -> list[tuple]:
    """The page's band keys: ``("m", i, bytes)`` for its MinHash bands, ``("s", i,
    bits)`` for its SimHash blocks (Manku et al.)."""
    keys = []
    if conf["dedup.simhash.distance"] >= 0 and page["simhash"] is not None:
        mask = (1 << BLOCK_BITS) - 1
        keys += [("s", i, (page["simhash"] >> (i * BLOCK_BITS)) & mask) for i in range(BLOCKS)]
    if conf["dedup.minhash.threshold"] >= 0 and page["minhash"] is not None:
        sketch = bytes(page["minhash"])
        keys += [
            ("m", i, sketch[i * MINHASH_ROWS : (i + 1) * MINHASH_ROWS])
            for i in range(MINHASH_BANDS)
        ]
    return keys


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


def meetings(fresh: list[dict], pages: dict[str, dict], conf: dict) -> dict:
    """(fresh url, other url) -> (exact, band kinds) of the pairs met: a page of the
    round and any page sharing its SHA-256 or a band (SimHash blocks only where one of
    the two has no sketch)."""
    wanted_hashes = {page["content_hash"] for page in fresh}
    wanted_bands = {key for page in fresh for key in band_keys(page, conf)}
    by_hash, by_band = defaultdict(list), defaultdict(list)
    for page in pages.values():
        if page["content_hash"] in wanted_hashes:
            by_hash[page["content_hash"]].append(page["url"])
        for key in band_keys(page, conf):
            if key in wanted_bands:
                by_band[key].append(page["url"])
    met: dict[tuple, tuple] = {}
    for page in fresh:
        url, sketched = page["url"], page["minhash"] is not None
        for other in by_hash[page["content_hash"]]:
            met[(url, other)] = (True, set())
        for key in band_keys(page, conf):
            for other in by_band[key]:
                if key[0] == "s" and sketched and pages[other]["minhash"] is not None:
                    continue  # two sketched pages meet on their MinHash bands only
                _, kinds = met.setdefault((url, other), (False, set()))
                kinds.add(key[0])
    return {pair: found for pair, found in met.items() if pair[0] != pair[1]}


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
