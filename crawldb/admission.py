"""Which newly found URLs enter the crawldb: the spider-trap defences of updatedb,
written once over Arrow tables, run in the driver on a small crawldb's whole round and
by Spark on buckets of whole hosts (``engine.executors.admission``).

A link to a URL already in the crawldb is always kept (it may lower the URL's depth). A
new URL is refused, with the reason counted, when:

- ``depth``: it is deeper than ``db.max.depth`` links from a seed;
- ``duplicate_variant``: its dedup key (``lib.url.normalize.UrlNormalizer.dedup``) is already
  in the crawldb or taken by a better new URL of this round (a redirect target first,
  then the shallowest, then the least URL); a redirect target is always kept, since it is
  what the site serves (so ``/a/`` -> 301 -> ``/a`` cannot loop);
- ``host_cap``: its host would hold more than ``db.max.urls.per.host`` URLs;
- ``pattern_cap``: its host would hold more than ``db.max.urls.per.pattern`` URLs of its
  pattern (``lib.url.traps``: calendars, session-id spaces, endless page counters).

Each defence counts only the links no earlier one refused; under a cap the crawldb's
URLs of the group count first, then the shallowest, the best scored and the least URL
are admitted first. A missing depth sorts first, a missing score or redirect flag last.
The tables given must hold every row of the hosts they name, and of their variants with
or without ``www.`` (a dedup key stays within them: ``crawldb.selection.variant_host``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from crawldb.selection import by_host, depths, floats, ranked, single_array
from lib.url.traps import url_patterns

LINK_COLUMNS = ("url", "dedup_key", "host", "depth", "score", "redirect")


def admit(links: pa.Table, crawldb: pa.Table, conf: Mapping[str, Any]) -> pa.Table:
    """``links`` (at least ``LINK_COLUMNS``) with a ``reason`` column: null to keep the
    link, else why it is refused. ``crawldb``: its rows' url, dedup_key and host."""
    known = pc.is_in(links.column("url"), value_set=crawldb.column("url").combine_chunks())
    reasons = np.full(links.num_rows, None, dtype=object)
    new = ~known.to_numpy(zero_copy_only=False)
    index = np.flatnonzero(new)
    fresh = links.take(pa.array(index, pa.int64()))
    taken = crawldb.column("dedup_key").drop_null().combine_chunks()
    part = variant_reasons(fresh, taken, conf["db.max.depth"])
    hosts = counts(crawldb.column("host"))
    by = fresh.column("host")
    refuse_beyond(fresh, part, by, hosts, conf["db.max.urls.per.host"], "host_cap")
    reasons[index] = part
    pattern_cap(fresh, reasons, index, crawldb, hosts, conf["db.max.urls.per.pattern"])
    return links.append_column("reason", pa.array(reasons, pa.string()))


def variant_reasons(new: pa.Table, taken, max_depth: int) -> np.ndarray:
    """Each new link's reason after the first two defences: ``depth``, else
    ``duplicate_variant`` (its key ``taken`` by the crawldb or by a better new link)."""
    reasons = np.full(new.num_rows, None, dtype=object)
    if not new.num_rows:
        return reasons
    redirect = new.column("redirect")
    # A redirect target first, then a plain link, then one of no flag (Spark's DESC).
    flag = pc.fill_null(pc.if_else(redirect, 0, 1), 2).cast(pa.int8())
    order = [("flag", flag, "ascending"), ("depth", pa.array(depths(new)), "ascending")]
    order.append(("url", new.column("url"), "ascending"))
    index, rank = ranked(new, new.column("dedup_key"), order)
    later = np.zeros(new.num_rows, dtype=bool)
    later[index] = rank > 1
    in_crawldb = pc.is_in(new.column("dedup_key"), value_set=taken)
    claimed = later | pc.fill_null(in_crawldb, False).to_numpy(zero_copy_only=False)
    plain = pc.fill_null(pc.invert(redirect), False).to_numpy(zero_copy_only=False)
    depth = floats(new.column("depth"))
    with np.errstate(invalid="ignore"):
        deep = (max_depth >= 0) & (depth > max_depth)
    reasons[plain & claimed] = "duplicate_variant"
    reasons[deep] = "depth"
    return reasons


def pattern_cap(new, reasons, index, crawldb, hosts: dict, limit: int) -> None:
    """The pattern cap, counted (a regex a URL) only on the hosts with more URLs, known
    and still open, than a pattern may have: on the others no pattern can reach it."""
    if limit < 0 or not new.num_rows:
        return
    open_ = np.array([reason is None for reason in reasons[index]])
    still_open = counts(new.filter(pa.array(open_)).column("host"))
    crowded = {h for h, n in still_open.items() if limit < n + hosts.get(h, 0)}
    if not crowded:
        return
    crowded_set = pa.array(sorted(crowded), pa.string())
    mine = pc.is_in(new.column("host"), value_set=crowded_set).to_numpy(zero_copy_only=False)
    rows = new.filter(pa.array(mine))
    known = crawldb.filter(pc.is_in(crawldb.column("host"), value_set=crowded_set))
    existing = counts(patterns_of(known))
    part = reasons[index[mine]]
    refuse_beyond(rows, part, patterns_of(rows), existing, limit, "pattern_cap")
    reasons[index[mine]] = part


def refuse_beyond(new, reasons, groups, existing: dict, limit: int, reason: str) -> None:
    """Set ``reason`` on the open links (``reasons`` None) beyond ``limit`` URLs per
    group (``groups``: a column aligned with ``new``), the crawldb's ``existing`` URLs of
    the group counted first."""
    if limit < 0 or not new.num_rows:
        return
    open_ = np.array([value is None for value in reasons], dtype=bool)
    where = np.flatnonzero(open_)
    if not len(where):
        return
    rows = new.take(pa.array(where, pa.int64()))
    group = single_array(groups).take(pa.array(where, pa.int64()))
    score = pc.fill_null(rows.column("score").cast(pa.float64()), -np.inf)
    order = [("depth", pa.array(depths(rows)), "ascending")]
    order += [("missing", pc.is_null(rows.column("score")).cast(pa.int8()), "ascending")]
    order += [("score", score, "descending"), ("url", rows.column("url"), "ascending")]
    index, rank = ranked(rows, group, order)
    before = by_host(group, lambda key: existing.get(key, 0), np.int64)[index]
    beyond = index[rank + before > limit]
    reasons[where[beyond]] = reason


def patterns_of(rows: pa.Table) -> pa.Array:
    """Each row's (host, URL pattern) group, as one string."""
    patterns = url_patterns(single_array(rows.column("url")))
    return pc.binary_join_element_wise(single_array(rows.column("host")), patterns, "\t")


def counts(column) -> dict:
    """Value -> how many rows have it (nulls left out)."""
    values = pc.value_counts(pc.drop_null(column)).to_pylist()
    return {value["values"]: value["counts"] for value in values}
