"""The rules of duplicate detection (told in ``jobs/dedup.py``'s docstring), over Arrow
tables, written once for both executors: the driver runs each rule on the whole table,
Spark on each partition of rows grouped by the rule's key (``engine.executors.duplicates``).

- ``canonical_verdicts``: rows keyed by the URL a page names as canonical (its own URL
  when it names none) give each page naming a page that names none a verdict.
- ``content_verdicts``: rows keyed by ``crawldb.duplicate_keys.probe_keys`` give each page
  worse than a page it duplicates (the same body, SimHashes within the distance, or met
  on a MinHash band and sketches that resemble), where one of the two is of the round
  (``fresh``), the best of those pages. Within a key the pages of one body are one run:
  a pair of runs is judged once, whatever the runs' sizes.
- ``final_verdicts``: rows keyed by URL give each page its one verdict (a canonical first,
  then the best copy), and the round's duplicates left without one are restored.
"""

from __future__ import annotations

import math

from crawldb.duplicate_keys import (
    MINHASH_SIZE,
    Prints,
    is_band,
    is_sha,
    keep_columns,
    keep_rank,
    probe_keys,
)
from lib import vocabulary as st

VERDICT_DDL = (
    "url STRING, duplicate_of STRING, kind STRING, status STRING, was_of STRING, "
    "fresh BOOLEAN, s DOUBLE, n BIGINT, t BIGINT"
)
CANONICAL_ROW_DDL = (
    "k STRING, url STRING, names BOOLEAN, status STRING, duplicate_of STRING, fresh BOOLEAN"
)
CANONICAL_DDL = (
    "url STRING, duplicate_of STRING, touched BOOLEAN, status STRING, was_of STRING, fresh BOOLEAN"
)
FINAL_DDL = "url STRING, status STRING, duplicate_of STRING, kind STRING, changed BOOLEAN"
# A page's verdicts, first taken first.
PRECEDENCE = {"canonical": 0, "exact": 1, "near": 1, "restored": 2}


def canonical_rows(pages):
    """Row-wise: each page keyed by the canonical it names, else by its URL."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pc.is_valid(pages.column("canonical"))
    return pa.table(
        {
            "k": pc.coalesce(pages.column("canonical"), pages.column("url")),
            "url": pages.column("url"),
            "names": names,
            "status": pages.column("status"),
            "duplicate_of": pages.column("duplicate_of"),
            "fresh": pages.column("fresh"),
        }
    )


def canonical_verdicts(rows):
    """Keyed by ``k``: (``CANONICAL_DDL``) each page naming a page that names none;
    ``touched``: one of the two is of the round."""
    import pyarrow as pa
    import pyarrow.compute as pc

    named = pc.and_(pc.invert(rows.column("names")), pc.equal(rows.column("k"), rows.column("url")))
    targets = rows.filter(named).select(["k", "fresh"]).rename_columns(["k", "target_fresh"])
    met = rows.filter(rows.column("names")).join(targets, "k", join_type="inner")
    return pa.table(
        {
            "url": met.column("url"),
            "duplicate_of": met.column("k"),
            "touched": pc.or_(met.column("fresh"), met.column("target_fresh")),
            "status": met.column("status"),
            "was_of": met.column("duplicate_of"),
            "fresh": met.column("fresh"),
        }
    )


def canonical_found(canonical):
    """The verdicts (``VERDICT_DDL``) of the canonical verdicts a round touches."""

    touched = canonical.filter(canonical.column("touched"))
    return _verdict_rows(touched, touched.column("duplicate_of"), "canonical", None)


def restore_candidates(pages):
    """Row-wise: the round's duplicates, each a ``restored`` verdict that a better one
    replaces (``VERDICT_DDL``)."""
    import pyarrow.compute as pc

    duplicate = pc.equal(pages.column("status"), st.DUPLICATE)
    rows = pages.filter(pc.and_(pages.column("fresh"), duplicate))
    rows = rows.append_column("was_of", rows.column("duplicate_of"))
    return _verdict_rows(rows, None, "restored", None)


def _verdict_rows(members, targets, kind: str, target_keys):
    """``VERDICT_DDL`` rows: the ``members``' (a table with url, status, was_of, fresh)
    verdicts of ``kind``, pointing at ``targets`` (URLs, or None), whose keep columns
    are ``target_keys`` (or None: zeros)."""
    import numpy as np
    import pyarrow as pa

    count = members.num_rows
    zeros = [np.zeros(count), np.zeros(count, np.int64), np.zeros(count, np.int64)]
    s, n, t = target_keys[:3] if target_keys is not None else zeros
    return pa.table(
        {
            "url": members.column("url"),
            "duplicate_of": pa.nulls(count, pa.string()) if targets is None else targets,
            "kind": pa.array([kind] * count, pa.string()),
            "status": members.column("status"),
            "was_of": members.column("was_of"),
            "fresh": members.column("fresh"),
            "s": pa.array(np.asarray(s, dtype=np.float64)),
            "n": pa.array(np.asarray(n, dtype=np.int64)),
            "t": pa.array(np.asarray(t, dtype=np.int64)),
        }
    )


class Runs:
    """Key rows sorted by key, body and keep rank, cut into runs (one key, one body):
    each run's best row, best row wanting its key and best row offering it (-1: none)."""

    def __init__(self, keys, pages):
        import numpy as np
        import pyarrow.compute as pc

        k, wants, offers, page = keys
        rank = keep_rank(pages)
        encoded = pc.dictionary_encode(pages.column("content_hash")).combine_chunks()
        body = np.asarray(pc.fill_null(encoded.indices, -1), dtype=np.int64)
        body = np.where(body < 0, -2 - np.arange(len(body)), body)  # no body: a run alone
        order = np.lexsort((rank[page], body[page], k))
        self.k, self.wants, self.offers = k[order], wants[order], offers[order]
        self.page, self.rank = page[order], rank[page[order]]
        body = body[self.page]
        start = np.ones(len(order), dtype=bool)
        start[1:] = (self.k[1:] != self.k[:-1]) | (body[1:] != body[:-1])
        self.starts = np.flatnonzero(start)
        self.run = np.cumsum(start) - 1
        self.first_wanting = self._first(self.wants)
        self.first_offering = self._first(self.offers)

    def _first(self, mask):
        """Per run, the first row (in keep order) of ``mask``, -1 if none."""
        import numpy as np

        if not len(self.starts):
            return np.zeros(0, dtype=np.int64)
        rows = np.arange(len(mask))
        marked = np.where(mask, rows, len(mask))
        first = np.minimum.reduceat(marked, self.starts)
        return np.where(first < len(mask), first, -1)


def content_verdicts(keys, pages, conf: dict):
    """Keyed by ``k``: the ``exact`` and ``near`` verdicts (``VERDICT_DDL``) of the key
    rows ``keys`` (``probe_keys``' arrays over ``pages``), the best target of each page."""
    import numpy as np
    import pyarrow.compute as pc

    runs = Runs(keys, pages)
    sha = is_sha(runs.k)
    exact = _exact_pairs(runs, sha)
    near = _near_pairs(runs, ~sha, Prints(pages, conf), conf)
    members, targets = (np.concatenate([exact[j], near[j]]) for j in (0, 1))
    is_exact = np.arange(len(members)) < len(exact[0])
    # A page met in many keys gets many targets: its best one (the lowest rank) only.
    url = pc.dictionary_encode(pages.column("url")).combine_chunks().indices
    member_url = np.asarray(url, dtype=np.int64)[runs.page[members]]
    order = np.lexsort((runs.rank[targets], member_url))
    best = order[_firsts(member_url[order])]
    return _pair_verdicts(pages, runs.page[members[best]], runs.page[targets[best]], is_exact[best])


def _firsts(values):
    """Whether each value of a sorted numpy array is the first of its equals."""
    import numpy as np

    first = np.ones(len(values), dtype=bool)
    first[1:] = values[1:] != values[:-1]
    return first


def _exact_pairs(runs: Runs, sha):
    """(member row, target row) in runs of a SHA-256 key: a page of the round gets the
    run's best page, an earlier page the run's best page of the round, if better."""
    import numpy as np

    rows = np.flatnonzero(sha)
    run = runs.run[rows]
    best = runs.starts[run]
    target = np.where(runs.wants[rows], best, runs.first_wanting[run])
    kept = (target >= 0) & (target < rows)
    return rows[kept], target[kept]


def _near_pairs(runs: Runs, banded, prints: Prints, conf: dict):
    """(member row, target row) of the near copies: run A (a row wanting the key) and run
    B (a row offering it) of one key, their best pages judged; of a duplicate pair of
    runs, A's wanting rows get B's best offering row, B's offering rows A's best wanting
    row, where the target is better."""
    import numpy as np
    import pyarrow as pa

    in_band = banded[runs.starts]
    runs_k = runs.k[runs.starts]
    ids = np.arange(len(runs.starts))
    wanting = in_band & (runs.first_wanting >= 0)
    offering = in_band & (runs.first_offering >= 0)
    a_side = pa.table({"k": runs_k[wanting], "a": ids[wanting]})
    b_side = pa.table({"k": runs_k[offering], "b": ids[offering]})
    pairs = a_side.join(b_side, "k", join_type="inner")
    a = np.asarray(pairs.column("a"), dtype=np.int64)
    b = np.asarray(pairs.column("b"), dtype=np.int64)
    a, b = a[a != b], b[a != b]
    same = _judged(runs, a, b, prints, conf)
    a, b = a[same], b[same]
    members_a, targets_a = _expanded(
        runs, *_best_per_run(runs, a, runs.first_offering[b]), runs.wants
    )
    members_b, targets_b = _expanded(
        runs, *_best_per_run(runs, b, runs.first_wanting[a]), runs.offers
    )
    members = np.concatenate([members_a, members_b])
    targets = np.concatenate([targets_a, targets_b])
    better = runs.rank[targets] < runs.rank[members]
    return members[better], targets[better]


def _judged(runs: Runs, a, b, prints: Prints, conf: dict):
    """Whether the runs ``a`` and ``b`` (of one key) hold duplicates: their best pages'
    SimHashes within the distance, or (met on a MinHash band) sketches that resemble."""
    import numpy as np

    pa_, pb = runs.page[runs.starts[a]], runs.page[runs.starts[b]]
    same = np.zeros(len(a), dtype=bool)
    distance, threshold = conf["dedup.simhash.distance"], conf["dedup.minhash.threshold"]
    if distance >= 0:
        both = prints.has_simhash[pa_] & prints.has_simhash[pb]
        bits = np.bitwise_count(prints.simhash[pa_] ^ prints.simhash[pb])
        same |= both & (bits <= distance)
    if threshold >= 0:
        # Sketch bytes agree with probability J + (1 - J) / 256 (b-bit MinHash).
        needed = math.ceil(MINHASH_SIZE * (threshold * 255 / 256 + 1 / 256))
        band = is_band(runs.k[runs.starts[a]])
        both = prints.has_sketch[pa_] & prints.has_sketch[pb] & band
        agree = (prints.minhash[pa_] == prints.minhash[pb]).sum(axis=1)
        same |= both & (agree >= needed)
    return same


def _best_per_run(runs: Runs, run_ids, targets):
    """``(run_ids, targets)`` with each run once, with its best target: a run met by
    many (in this key and others) is expanded to its rows once."""
    import numpy as np

    order = np.lexsort((runs.rank[targets], run_ids))
    best = order[_firsts(run_ids[order])]
    return run_ids[best], targets[best]


def _expanded(runs: Runs, run_ids, targets, mask):
    """(member row, target row): the rows of ``mask`` in each run of ``run_ids`` (each run
    once), each with the target given for its run."""
    import numpy as np
    import pyarrow as pa

    rows = np.flatnonzero(mask)
    members = pa.table({"run": runs.run[rows], "row": rows})
    wanted = pa.table({"run": run_ids, "target": targets})
    joined = members.join(wanted, "run", join_type="inner")
    return (
        np.asarray(joined.column("row"), dtype=np.int64),
        np.asarray(joined.column("target"), dtype=np.int64),
    )


def _pair_verdicts(pages, members, targets, exact):
    """``VERDICT_DDL`` rows of the pages ``members`` pointing at the pages ``targets``
    (page indices), of kind ``exact`` where it is set, else ``near``."""
    import pyarrow as pa

    member_rows = pages.select(["url", "status", "duplicate_of", "fresh"]).take(members)
    member_rows = member_rows.append_column("was_of", member_rows.column("duplicate_of"))
    target_rows = pages.select(["url", "score", "last_fetch_time"]).take(targets)
    rows = _verdict_rows(member_rows, target_rows.column("url"), "near", keep_columns(target_rows))
    kinds = pa.array(["exact" if flag else "near" for flag in exact.tolist()], pa.string())
    return rows.set_column(rows.schema.get_field_index("kind"), "kind", kinds)


def final_verdicts(rows):
    """Keyed by ``url``: each page's verdict (``FINAL_DDL``) of its verdict rows
    (``VERDICT_DDL``): a canonical first, then the best copy, else restored; a page of
    an earlier round already a duplicate is left as it is. ``changed``: the verdict
    changes the page."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = rows.column("kind")
    precedence = pc.if_else(
        pc.equal(kind, "canonical"), 0, pc.if_else(pc.equal(kind, "restored"), 2, 1)
    )
    open_ = pc.or_(rows.column("fresh"), pc.not_equal(rows.column("status"), st.DUPLICATE))
    rows = rows.append_column("p", precedence).filter(open_)
    ordered = rows.sort_by(
        [(c, "ascending") for c in ("url", "p", "s", "n", "t")] + [("duplicate_of", "ascending")]
    )
    chosen = ordered.filter(first_of_each(ordered.column("url").combine_chunks()))
    restored = pc.equal(chosen.column("kind"), "restored")
    status = pc.if_else(restored, st.FETCHED, st.DUPLICATE)
    target = chosen.column("duplicate_of")
    changed = pc.or_(
        pc.not_equal(status, chosen.column("status")),
        pc.invert(_same_or_both_null(target, chosen.column("was_of"))),
    )
    return pa.table(
        {"url": chosen.column("url"), "status": status, "duplicate_of": target}
        | {"kind": chosen.column("kind"), "changed": pc.fill_null(changed, True)}
    )


def first_of_each(sorted_values):
    """Whether each value of a sorted array is the first of its equals."""
    import numpy as np
    import pyarrow.compute as pc

    first = np.ones(len(sorted_values), dtype=bool)
    if len(sorted_values) > 1:
        first[1:] = np.asarray(pc.not_equal(sorted_values[1:], sorted_values[:-1]))
    return first


def _same_or_both_null(a, b):
    import pyarrow.compute as pc

    return pc.fill_null(pc.equal(a, b), pc.and_(pc.is_null(a), pc.is_null(b)))


def round_verdicts(pages, conf: dict):
    """Every verdict (``FINAL_DDL``) of the pages (an Arrow table of
    ``crawldb.duplicate_keys.PAGE_DDL``: every content page of the crawldb, those of the
    round ``fresh``), the rules run on the whole table."""
    import pyarrow as pa
    import pyarrow.compute as pc

    by_content, found = pages, []
    if conf["dedup.canonical"]:
        canonical = canonical_verdicts(canonical_rows(pages))
        named = pc.is_in(pages.column("url"), value_set=canonical.column("url"))
        by_content = pages.filter(pc.invert(named))
        found.append(canonical_found(canonical))
    found.append(content_verdicts(probe_keys(by_content, conf), by_content, conf))
    found.append(restore_candidates(pages))
    return final_verdicts(pa.concat_tables(found))


def with_verdicts(rows, verdicts):
    """The Arrow table ``rows`` (crawldb rows) with the status and ``duplicate_of`` of
    ``verdicts`` (rows of ``FINAL_DDL``) for the URLs they judge."""
    import pyarrow.compute as pc

    at = pc.index_in(rows.column("url"), value_set=verdicts.column("url").combine_chunks())
    judged = pc.is_valid(at)
    for name in ("status", "duplicate_of"):
        given = verdicts.column(name).combine_chunks().take(at)
        column = pc.if_else(judged, given, rows.column(name))
        rows = rows.set_column(rows.column_names.index(name), name, column)
    return rows
