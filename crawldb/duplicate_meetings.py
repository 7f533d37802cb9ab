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
    import numpy as np
    import pyarrow.compute as pc

    fresh = pages.filter(pc.fill_null(pages.column("fresh"), False))
    k, wants, _, _ = probe_keys(fresh, conf)
    return np.unique(k[wants])


def members(values, sorted_set):
    """Whether each of ``values`` is in ``sorted_set`` (a sorted numpy array): a binary
    search each, the set sorted once (``np.isin`` sorts it again every call)."""
    import numpy as np

    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def holding_wanted(pages, conf: dict, wanted):
    """The pages of ``pages`` holding a key of ``wanted`` (``wanted_keys``')."""
    import numpy as np

    k, _, _, index = probe_keys(pages, conf)
    return pages.take(np.unique(index[members(k, wanted)]))


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

    wanted = wanted_keys(pages, conf)
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
