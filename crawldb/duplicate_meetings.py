"""The pages a round's duplicate verdicts depend on (the pages it *meets*), over Arrow.

A round's verdicts (``crawldb.duplicates.round_verdicts``) depend only on the pages
holding a key one of the round's pages wants (``crawldb.duplicate_keys.probe_keys``:
every key group such a key makes is then whole) and on the pages naming, or named by,
one of those as canonical (every canonical group a page met is in is then whole). The
rules over those pages give the same verdicts as over every content page of the
crawldb. The driver narrows a small crawldb's pages so (``met_pages``, a slice at a
time); Spark's tasks run the same functions on their partitions
(``engine.executors.duplicates``), the keys wanted and the URLs named computed once and
passed in.
"""

from __future__ import annotations

from crawldb.duplicate_keys import probe_keys
from crawldb.duplicates import first_of_each

# Pages whose probe keys are made at once when the driver narrows a crawldb's pages: the
# keys are some tens a page, so a slice bounds their memory, not the crawldb's size.
SLICE_ROWS = 50_000


def wanted_keys(pages, conf: dict):
    """The distinct keys the round's pages of ``pages`` (a page table with ``fresh``)
    want, as a sorted numpy array."""
    import pyarrow.compute as pc

    fresh = pages.filter(pc.fill_null(pages.column("fresh"), False))
    k, wants, _, _ = probe_keys(fresh, conf)
    return unique_keys(k[wants])


class KeySet:
    """A sorted array of distinct int64 keys (``wanted_keys``'), asked of many values: a
    binary search each of the values that a table of the keys' low bits lets through.
    Most of a crawldb's keys are in no round's set, and one look at the table rules
    them out where a binary search takes some twenty. Made once a task or a pass: the
    table is some sixteen bytes a key, at most 64 MB."""

    def __init__(self, keys):
        import numpy as np

        self.keys = keys
        slots = 1 << 16
        while slots < 16 * len(keys) and slots < 1 << 26:
            slots <<= 1
        self.mask = np.int64(slots - 1)
        self.table = np.zeros(slots, dtype=bool)
        self.table[keys & self.mask] = True

    def holds(self, values):
        """Whether each of ``values`` (int64) is one of the keys."""
        import numpy as np

        found = np.zeros(len(values), dtype=bool)
        if not len(self.keys):
            return found
        maybe = np.flatnonzero(self.table[values & self.mask])
        candidates = values[maybe]
        at = np.minimum(np.searchsorted(self.keys, candidates), len(self.keys) - 1)
        found[maybe] = self.keys[at] == candidates
        return found


def unique_keys(keys):
    """The distinct values of ``keys`` (int64), sorted. Parts already sorted and unique,
    concatenated, are merged by a stable sort's runs rather than sorted again."""
    import numpy as np

    ordered = np.sort(np.asarray(keys, dtype=np.int64), kind="stable")
    if not len(ordered):
        return ordered
    return ordered[np.concatenate([[True], ordered[1:] != ordered[:-1]])]


def holding_wanted(pages, conf: dict, wanted: KeySet):
    """The pages of ``pages`` holding a key of ``wanted`` (of ``wanted_keys``)."""
    import numpy as np

    k, _, _, index = probe_keys(pages, conf)
    return pages.take(np.unique(index[wanted.holds(k)]))


def named_urls(met):
    """The URLs the pages ``met`` have or name as canonical (an Arrow array)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = [
        chunk
        for name in ("url", "canonical")
        for chunk in met.column(name).cast(pa.string()).chunks
    ]
    return pc.unique(pa.chunked_array(chunks, type=pa.string())).drop_null()


def in_canonical_groups(pages, named):
    """The pages of ``pages`` whose URL, or the canonical they name, is one of
    ``named`` (``named_urls``')."""
    import pyarrow.compute as pc

    by_url = pc.is_in(pages.column("url"), value_set=named)
    naming = pc.fill_null(pc.is_in(pages.column("canonical"), value_set=named), False)
    return pages.filter(pc.or_(by_url, naming))


def met_pages(pages, conf: dict, canonical: bool):
    """The pages of ``pages`` (the crawldb's content pages with ``fresh``, an Arrow
    table) the round's verdicts depend on, each once; ``canonical``: with the canonical
    groups of those met (``dedup.canonical``)."""
    import pyarrow as pa

    wanted = KeySet(wanted_keys(pages, conf))
    slices = range(0, pages.num_rows, SLICE_ROWS)
    found = [holding_wanted(pages.slice(start, SLICE_ROWS), conf, wanted) for start in slices]
    met = pa.concat_tables([pages.schema.empty_table(), *found])
    if canonical:
        met = pa.concat_tables([met, in_canonical_groups(pages, named_urls(met))])
    return each_once(met)


def each_once(pages):
    """``pages`` with one row a URL, sorted by URL."""
    import pyarrow.compute as pc

    urls = pages.column("url").combine_chunks()
    order = pc.sort_indices(urls)
    return pages.take(order).filter(first_of_each(urls.take(order)))
