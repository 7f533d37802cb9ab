"""Soft-404 pages, written once over Arrow tables: a page fetched this round that looks
like its host's answer to a path that cannot exist (the fetcher's probe,
``fetcher.soft404.probe``) is made gone with reason ``soft_404``.

A host's template is its 200 answer to the probe: the segment's own where it probed the
host, else the cache's (``DIR/soft404``). A page looks like it when its SHA-256 is the
template's, or its SimHash is within ``dedup.simhash.distance`` bits of the template's
(a negative distance: exact copies only).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from crawldb.selection import ranked
from lib import vocabulary as st

ANSWER_COLUMNS = ("host", "url", "probed_at", "http_status", "content_hash", "simhash")
NO_TEMPLATE = (None, None)


def probe_answers(fetched: pa.Table, prints: pa.Table) -> pa.Table:
    """The answered probes of a fetch table's rows (url, host, fetched_at, http_status,
    origin), one a host (its least URL), with parse's fingerprints of the answer
    (``prints``: url, content_hash, simhash; null where parse kept none)."""
    answered = pc.and_(
        pc.equal(fetched.column("origin"), st.ORIGIN_PROBE),
        pc.is_valid(fetched.column("http_status")),
    )
    probes = fetched.filter(pc.fill_null(answered, False))
    index, rank = ranked(
        probes, probes.column("host"), [("url", probes.column("url"), "ascending")]
    )
    probes = probes.take(pa.array(np.sort(index[rank == 1]), pa.int64()))
    probes = probes.rename_columns(
        ["probed_at" if n == "fetched_at" else n for n in probes.column_names]
    )
    joined = probes.join(
        prints.select(["url", "content_hash", "simhash"]), "url", join_type="left outer"
    )
    return joined.select(list(ANSWER_COLUMNS)).sort_by("host")


def templates(answers: pa.Table, cached: pa.Table | None) -> dict[str, tuple]:
    """Host -> (content hash, SimHash) of its 200 answer to the probe: the segment's
    ``answers`` first, else the ``cached`` rows (both of ``ANSWER_COLUMNS``)."""
    found = {}
    for table in (answers, cached):
        if table is None:
            continue
        for row in table.select(list(ANSWER_COLUMNS)).to_pylist():
            found.setdefault(row["host"], row)
    return {
        host: (row["content_hash"], row["simhash"])
        for host, row in found.items()
        if row["http_status"] == 200
    }


def soft_404_hits(table: pa.Table, by_host_template: Mapping, segment: str, distance: int):
    """A mask of the rows (host, status, segment, content_hash, simhash) fetched in
    ``segment`` that look like their host's template."""
    if not by_host_template or not table.num_rows:
        return np.zeros(table.num_rows, dtype=bool)
    chosen = [by_host_template.get(host, NO_TEMPLATE) for host in table.column("host").to_pylist()]
    probe_hash = pa.array([template[0] for template in chosen], pa.string())
    probe = pa.array([template[1] for template in chosen], pa.int64())
    same = pc.fill_null(pc.equal(table.column("content_hash"), probe_hash), False)
    looks_missing = same.to_numpy(zero_copy_only=False)
    if distance >= 0:
        mine = pc.fill_null(table.column("simhash"), 0).to_numpy().view(np.uint64)
        theirs = pc.fill_null(probe, 0).to_numpy().view(np.uint64)
        both = pc.and_(pc.is_valid(table.column("simhash")), pc.is_valid(probe))
        near = np.bitwise_count(mine ^ theirs) <= distance
        looks_missing |= near & both.to_numpy(zero_copy_only=False)
    fetched_here = pc.and_(
        pc.equal(table.column("status"), st.FETCHED), pc.equal(table.column("segment"), segment)
    )
    has_template = pc.is_valid(probe_hash).to_numpy(zero_copy_only=False)
    return (
        pc.fill_null(fetched_here, False).to_numpy(zero_copy_only=False)
        & has_template
        & looks_missing
    )


def marked(table: pa.Table, by_host_template: Mapping, segment: str, distance: int) -> pa.Table:
    """The crawldb rows of ``table``, those ``soft_404_hits`` finds made gone."""
    hits = pa.array(soft_404_hits(table, by_host_template, segment, distance))
    if not pc.any(hits).as_py():
        return table
    for name, value in (("status", st.GONE), ("reason", "soft_404")):
        column = pc.if_else(hits, pa.scalar(value, pa.string()), table.column(name))
        table = table.set_column(table.column_names.index(name), name, column)
    return table
