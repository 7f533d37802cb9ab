"""The duplicate pairs among a round's pages and the pages they meet, found in columns:
``crawldb.duplicates``' rules (its docstring) applied with numpy and Arrow's hash join.

A round of tens of thousands of pages offers some twenty keys a page (a SHA-256, four
SimHash blocks, sixteen MinHash bands); a dict per key and a Python test per pair made
the round's dedup pass the largest part of updatedb in the driver. Here the keys are
numpy arrays, the meetings one join, and the judgement (SimHash distance, sketch
agreement) one vectorized test over the pairs met.

A key is one unsigned 64-bit integer: its band's number above the band's value (a
SimHash block's ``BLOCK_BITS`` or a MinHash band's ``MINHASH_ROWS`` bytes).
"""

from __future__ import annotations

import math

from lib.content.fingerprint import MINHASH_BANDS, MINHASH_ROWS, MINHASH_SIZE

BLOCKS, BLOCK_BITS = 4, 16
# Band numbers: SimHash block i is 2i, or 2i + 1 for a page whose sketch takes part;
# MinHash band j is FIRST_BAND + j.
FIRST_BAND = 2 * BLOCKS
VALUE_BITS = max(8 * MINHASH_ROWS, BLOCK_BITS)
if VALUE_BITS + (FIRST_BAND + MINHASH_BANDS).bit_length() > 64:
    raise ValueError(f"MINHASH_ROWS={MINHASH_ROWS}: a band's key does not fit in 64 bits")


class PageColumns:
    """The pages' fingerprints as numpy arrays, in the order of ``urls``."""

    def __init__(self, pages: dict[str, dict], conf: dict):
        import numpy as np

        self.urls = list(pages)
        rows = list(pages.values())
        simhashes = [row["simhash"] for row in rows]
        self.has_simhash = np.array([s is not None for s in simhashes], dtype=bool)
        signed = np.array([s or 0 for s in simhashes], dtype=np.int64)
        self.simhash = signed.view(np.uint64)
        sketches = [row["minhash"] for row in rows]
        self.has_sketch = np.array([s is not None for s in sketches], dtype=bool)
        blank = bytes(MINHASH_SIZE)
        joined = b"".join(bytes(s) if s is not None else blank for s in sketches)
        self.minhash = np.frombuffer(joined, dtype=np.uint8).reshape(len(rows), MINHASH_SIZE)
        self.hashes = [row["content_hash"] for row in rows]
        # Sketches take part when MinHash is on; blocks when SimHash is.
        self.sketched = self.has_sketch & (conf["dedup.minhash.threshold"] >= 0)
        self.blocked = self.has_simhash & (conf["dedup.simhash.distance"] >= 0)

    def block_keys(self, which, flag):
        """(keys, page index) of the blocks of the pages ``which`` (a bool mask), numbered
        with ``flag`` (a bool array over all pages, or a bool)."""
        import numpy as np

        index = np.flatnonzero(which & self.blocked)
        flags = np.broadcast_to(flag, self.simhash.shape)[index].astype(np.uint64)
        mask = np.uint64((1 << BLOCK_BITS) - 1)
        keys = [
            (np.uint64(2 * i) + flags) << np.uint64(VALUE_BITS)
            | (self.simhash[index] >> np.uint64(i * BLOCK_BITS)) & mask
            for i in range(BLOCKS)
        ]
        return np.concatenate(keys), np.tile(index, BLOCKS)

    def band_keys(self, which):
        """(keys, page index) of the MinHash bands of the sketched pages ``which``."""
        import numpy as np

        index = np.flatnonzero(which & self.sketched)
        bands = self.minhash[index].reshape(len(index), MINHASH_BANDS, MINHASH_ROWS)
        values = np.zeros((len(index), MINHASH_BANDS), dtype=np.uint64)
        for byte in range(MINHASH_ROWS):  # big-endian, as the row-dict rules read them
            values = values << np.uint64(8) | bands[:, :, byte].astype(np.uint64)
        numbers = np.arange(FIRST_BAND, FIRST_BAND + MINHASH_BANDS, dtype=np.uint64)
        keys = numbers << np.uint64(VALUE_BITS) | values
        return keys.T.ravel(), np.tile(index, MINHASH_BANDS)

    def offered(self):
        """Every page's keys: its blocks, numbered with whether it is sketched, and its
        bands."""
        return _joined(self.block_keys(True, self.sketched), self.band_keys(True))

    def wanted(self, fresh):
        """The keys the pages ``fresh`` meet others on: the blocks of unsketched pages,
        and their bands if sketched, else the blocks of sketched pages too (two sketched
        pages meet on their MinHash bands only)."""
        unsketched = fresh & ~self.sketched
        return _joined(
            self.block_keys(fresh, False),
            self.band_keys(fresh),
            self.block_keys(unsketched, True),
        )


def _joined(*parts):
    import numpy as np

    return np.concatenate([k for k, _ in parts]), np.concatenate([i for _, i in parts])


def met_pairs(columns: PageColumns, fresh):
    """Arrow table (a, b, exact, band) of the pairs met: a page of the round (``fresh``,
    a bool mask) and another sharing its SHA-256 (``exact``) or a key (``band``: a
    MinHash band among them), once a pair."""
    import numpy as np
    import pyarrow as pa

    keys, index = columns.wanted(fresh)
    wanted = pa.table({"k": keys, "a": index.astype(np.int32)})
    keys, index = columns.offered()
    by_key = wanted.join(pa.table({"k": keys, "b": index.astype(np.int32)}), "k", join_type="inner")
    first = np.uint64(FIRST_BAND) << np.uint64(VALUE_BITS)
    band = np.asarray(by_key.column("k"), dtype=np.uint64) >= first
    hashes = pa.array(columns.hashes, pa.string())
    pages = pa.table({"h": hashes, "b": np.arange(len(hashes), dtype=np.int32)})
    own = pages.filter(pa.array(fresh)).rename_columns(["h", "a"])
    by_hash = own.join(pages.filter(hashes.is_valid()), "h", join_type="inner")
    a = np.concatenate([_ints(by_key.column("a")), _ints(by_hash.column("a"))])
    b = np.concatenate([_ints(by_key.column("b")), _ints(by_hash.column("b"))])
    exact = np.concatenate([np.zeros(len(band), bool), np.ones(by_hash.num_rows, bool)])
    band = np.concatenate([band, np.zeros(by_hash.num_rows, bool)])
    other = a != b
    met = pa.table({"a": a[other], "b": b[other], "exact": exact[other], "band": band[other]})
    grouped = met.group_by(["a", "b"]).aggregate([("exact", "any"), ("band", "any")])
    return pa.table(
        {name: grouped.column(name) for name in ("a", "b")}
        | {"exact": grouped.column("exact_any"), "band": grouped.column("band_any")}
    )


def _ints(column):
    """An Arrow column of indices as a numpy array (of int32 when empty too)."""
    import numpy as np

    return np.asarray(column, dtype=np.int32)


def duplicate_pairs(columns: PageColumns, met, conf: dict):
    """(a, b) index arrays of the pairs ``met`` that are duplicates: the same body, the
    SimHashes within the distance, or (met on a MinHash band) sketches that resemble."""
    import numpy as np

    a, b = _ints(met.column("a")), _ints(met.column("b"))
    same = np.asarray(met.column("exact"), dtype=bool)
    distance, threshold = conf["dedup.simhash.distance"], conf["dedup.minhash.threshold"]
    if distance >= 0:
        both = columns.has_simhash[a] & columns.has_simhash[b]
        bits = np.bitwise_count(columns.simhash[a] ^ columns.simhash[b])
        same = same | (both & (bits <= distance))
    if threshold >= 0:
        # Sketch bytes agree with probability J + (1 - J) / 256 (b-bit MinHash).
        needed = math.ceil(MINHASH_SIZE * (threshold * 255 / 256 + 1 / 256))
        both = (
            columns.has_sketch[a]
            & columns.has_sketch[b]
            & np.asarray(met.column("band"), dtype=bool)
        )
        agree = (columns.minhash[a] == columns.minhash[b]).sum(axis=1)
        same = same | (both & (agree >= needed))
    return a[same], b[same]


def round_pairs(pages: dict[str, dict], round_urls: set, conf: dict):
    """``(urls, a, b)``: the pages' URLs in order, and index arrays of the duplicate
    pairs of a page of the round (``round_urls``) and another page."""
    import numpy as np

    columns = PageColumns(pages, conf)
    fresh = np.array([url in round_urls for url in columns.urls], dtype=bool)
    a, b = duplicate_pairs(columns, met_pairs(columns, fresh), conf)
    return columns.urls, a, b
