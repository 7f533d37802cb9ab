"""What the duplicate rules (``crawldb.duplicates``) read of a page: the copy kept
first (``keep_rank``), and the keys pages meet on (``probe_keys``), in columns.

A key is one 64-bit integer: its band's number above the band's value. The SHA-256 is
band ``SHA_BAND`` (a CRC-32 of it: pages of another body that share one are told apart
by the whole hash); SimHash block i is band 2i, or 2i + 1 for a page whose sketch
takes part; MinHash band j is ``FIRST_BAND + j`` (``MINHASH_ROWS`` bytes, big-endian).
A page offers the keys of its own print and, when it is of the round (``fresh``), wants
the keys it can meet others on: two sketched pages meet on their MinHash bands only, so
a sketched page of the round wants the blocks of unsketched pages and an unsketched one
the blocks of both.
"""

from __future__ import annotations

from lib.content.fingerprint import MINHASH_BANDS, MINHASH_ROWS, MINHASH_SIZE

BLOCKS, BLOCK_BITS = 4, 16
SHA_BAND = 2 * BLOCKS
FIRST_BAND = SHA_BAND + 1
VALUE_BITS = max(8 * MINHASH_ROWS, BLOCK_BITS, 32)
if VALUE_BITS + (FIRST_BAND + MINHASH_BANDS).bit_length() > 63:
    raise ValueError(f"MINHASH_ROWS={MINHASH_ROWS}: a band's key does not fit in 63 bits")

# The crawldb's columns the rules read, and the page table they take (times in epoch
# ms; ``fresh``: the page is of the round, or, for the full pass, any page).
PAGE_COLUMNS = (
    "url",
    "status",
    "duplicate_of",
    "segment",
    "content_hash",
    "simhash",
    "minhash",
    "score",
    "last_fetch_time",
    "canonical",
)
PAGE_DDL = (
    "url STRING, status STRING, duplicate_of STRING, segment STRING, content_hash STRING, "
    "simhash BIGINT, minhash BINARY, score DOUBLE, last_fetch_time BIGINT, "
    "canonical STRING, fresh BOOLEAN"
)
KEY_DDL = "k BIGINT, wants BOOLEAN, offers BOOLEAN"


def keep_columns(pages) -> list:
    """The columns the copy kept is chosen by, each ascending, none null: highest score
    (none last), shortest URL, earliest fetch (none last), URL in byte order."""
    import numpy as np
    import pyarrow.compute as pc

    score = np.asarray(pc.fill_null(pages.column("score"), -np.inf), dtype=np.float64)
    fetched = pc.fill_null(pages.column("last_fetch_time"), np.iinfo(np.int64).max)
    return [-score, pc.utf8_length(pages.column("url")), fetched, pages.column("url")]


def keep_rank(pages):
    """Each page's place in keep order (0: the copy kept first), an int64 array."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = keep_columns(pages)
    names = [f"c{i}" for i in range(len(columns))]
    table = pa.table(dict(zip(names, columns, strict=True)))
    order = pc.sort_indices(table, sort_keys=[(name, "ascending") for name in names])
    rank = np.empty(pages.num_rows, dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(pages.num_rows)
    return rank


class Prints:
    """The pages' fingerprints as numpy arrays, in the pages' order."""

    def __init__(self, pages, conf: dict):
        import numpy as np
        import pyarrow.compute as pc

        simhash = pages.column("simhash")
        self.has_simhash = np.asarray(pc.is_valid(simhash), dtype=bool)
        signed = np.asarray(pc.fill_null(simhash, 0), dtype=np.int64)
        self.simhash = signed.view(np.uint64)
        sketches = pages.column("minhash")
        self.has_sketch = np.asarray(pc.is_valid(sketches), dtype=bool)
        blank = bytes(MINHASH_SIZE)
        joined = b"".join(s if s is not None else blank for s in sketches.to_pylist())
        self.minhash = np.frombuffer(joined, dtype=np.uint8).reshape(-1, MINHASH_SIZE)
        self.sketched = self.has_sketch & (conf["dedup.minhash.threshold"] >= 0)
        self.blocked = self.has_simhash & (conf["dedup.simhash.distance"] >= 0)


def probe_keys(pages, conf: dict):
    """``(k, wants, offers, i)`` numpy arrays: the keys of the pages (an Arrow table of
    ``PAGE_DDL``), one a page and key, ``i`` the page's row."""
    import numpy as np

    prints = Prints(pages, conf)
    fresh = np.asarray(pages.column("fresh"), dtype=bool)
    every = np.ones(pages.num_rows, dtype=bool)
    sketched = prints.sketched
    parts = [
        _sha_keys(pages, fresh),
        _band_keys(prints, fresh),
        # Blocks numbered by the page's own sketch: offered; wanted by an unsketched page.
        _block_keys(prints, every, sketched, fresh & ~sketched, every),
        # Blocks numbered the other way: wanted only, by a page of the round.
        _block_keys(prints, fresh, ~sketched, fresh, ~every),
    ]
    return tuple(np.concatenate([part[j] for part in parts]) for j in (0, 2, 3, 1))


def _sha_keys(pages, fresh):
    """(keys, page index, wants, offers) of the pages' SHA-256, wanted by the round's."""
    import zlib

    import numpy as np
    import pyarrow.compute as pc

    hashes = pages.column("content_hash")
    index = np.flatnonzero(np.asarray(pc.is_valid(hashes), dtype=bool))
    values = np.array(
        [zlib.crc32(h.encode()) for h in hashes.take(index).to_pylist()], dtype=np.int64
    )
    keys = np.int64(SHA_BAND << VALUE_BITS) | values
    return keys, index, fresh[index], np.ones(len(index), dtype=bool)


def _block_keys(prints, which, flag, wants, offers):
    """(keys, page index, wants, offers) of the SimHash blocks of the pages ``which``,
    numbered with ``flag`` (bool arrays over all pages)."""
    import numpy as np

    index = np.flatnonzero(which & prints.blocked)
    flags = flag[index].astype(np.uint64)
    mask = np.uint64((1 << BLOCK_BITS) - 1)
    keys = [
        (np.uint64(2 * i) + flags) << np.uint64(VALUE_BITS)
        | (prints.simhash[index] >> np.uint64(i * BLOCK_BITS)) & mask
        for i in range(BLOCKS)
    ]
    index = np.tile(index, BLOCKS)
    return np.concatenate(keys).view(np.int64), index, wants[index], offers[index]


def _band_keys(prints, fresh):
    """(keys, page index, wants, offers) of the MinHash bands of the sketched pages."""
    import numpy as np

    index = np.flatnonzero(prints.sketched)
    bands = prints.minhash[index].reshape(len(index), MINHASH_BANDS, MINHASH_ROWS)
    values = np.zeros((len(index), MINHASH_BANDS), dtype=np.uint64)
    for byte in range(MINHASH_ROWS):
        values = values << np.uint64(8) | bands[:, :, byte].astype(np.uint64)
    numbers = np.arange(FIRST_BAND, FIRST_BAND + MINHASH_BANDS, dtype=np.uint64)
    keys = (numbers << np.uint64(VALUE_BITS) | values).T.ravel().view(np.int64)
    index = np.tile(index, MINHASH_BANDS)
    return keys, index, fresh[index], np.ones(len(index), dtype=bool)


def is_band(keys):
    """Whether keys are MinHash bands' (an int64 array)."""
    import numpy as np

    return keys >= np.int64(FIRST_BAND << VALUE_BITS)


def is_sha(keys):
    """Whether keys are SHA-256 keys (an int64 array)."""
    import numpy as np

    return (keys >> np.int64(VALUE_BITS)) == SHA_BAND
