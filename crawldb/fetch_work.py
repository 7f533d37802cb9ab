"""The fetch tasks' work rows: the rule, over Arrow tables, of what each fetch task is
given beside its hosts' URLs, run on whole tables in the driver or on the batches of
Spark's tasks (``engine.executors.fetch_work``).

A task gets the fetch list's rows of its hosts and, with ``url`` NULL, one row per
cached robots.txt answer still fresh, per host whose soft-404 probe answer is still
fresh, per URL an earlier round fetched (``known_url``: a redirect to one is recorded,
not followed) and per host still in its pause from the last round (``not_before``), each
in its host's ``partition``. ``placed`` (host -> partition) names the round's hosts: the
cached rows of other hosts are left out. Times are epoch ms.
"""

from __future__ import annotations

WORK_COLUMNS = (
    ("url", "string"),
    ("host", "string"),
    ("depth", "int32"),
    ("score", "float64"),
    ("etag", "string"),
    ("last_modified", "string"),
    ("tier", "string"),
    ("priority", "float64"),
    ("payload_digest", "string"),
    ("capture_time", "int64"),
    ("capture_record_id", "string"),
    ("partition", "int32"),
    ("robots_status", "int32"),
    ("robots_body", "binary"),
    ("probed", "bool"),
    ("known_url", "string"),
    ("not_before", "int64"),
)
LISTED_COLUMNS = (
    "url",
    "host",
    "depth",
    "score",
    "etag",
    "last_modified",
    "tier",
    "priority",
    "payload_digest",
    "capture_time",
    "capture_record_id",
    "partition",
)


def work_schema():
    """The work rows' Arrow schema."""
    import pyarrow as pa

    return pa.schema(WORK_COLUMNS)


def work_columns(given: dict, count: int):
    """An Arrow table of ``count`` work rows: the ``given`` columns (name -> Arrow
    column) cast to the work's types, NULL in the others."""
    import pyarrow as pa

    columns = {
        name: given[name].cast(kind) if name in given else pa.nulls(count, kind)
        for name, kind in WORK_COLUMNS
    }
    return pa.table(columns, schema=work_schema())


# A listed URL's archived capture, and the validators its conditional request sends.
CAPTURE_COLUMNS = ("payload_digest", "capture_time", "capture_record_id")
VALIDATORS = ("etag", "last_modified")


def listed_rows(fetchlist, archived: frozenset = frozenset()):
    """The fetch list's rows (with their ``partition``) as work rows; the columns an
    older fetch list lacks (tiers, the archived capture) are NULL. A URL whose capture
    is not in a segment of ``archived`` (its WARC files removed, or never named) loses
    its capture and its validators: its request is unconditional, and a full response
    is archived again rather than a revisit naming a record that is gone."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = fetchlist.schema.names
    given = {name: fetchlist.column(name) for name in LISTED_COLUMNS if name in names}
    if "capture_segment" in names and "capture_record_id" in names:
        kept = pc.fill_null(
            pc.is_in(fetchlist.column("capture_segment"), pa.array(sorted(archived), pa.string())),
            False,
        )
        kept = pc.and_(kept, pc.is_valid(fetchlist.column("capture_record_id")))
    else:  # a fetch list of a Trawl that kept no record IDs: nothing to name
        kept = pa.array([False] * fetchlist.num_rows, pa.bool_())
    for name in (*CAPTURE_COLUMNS, *VALIDATORS):
        if name in given:
            given[name] = pc.if_else(kept, given[name], pa.nulls(len(kept), given[name].type))
    return work_columns(given, fetchlist.num_rows)


def _of_hosts(table, placed: dict, keep):
    """The rows of ``table`` whose host is placed and ``keep`` (an Arrow mask) holds,
    and the partition of each."""
    import pyarrow as pa
    import pyarrow.compute as pc

    hosts = pa.array(list(placed), pa.string())
    kept = table.filter(pc.and_(pc.is_in(table.column("host"), value_set=hosts), keep))
    where = pc.index_in(kept.column("host"), value_set=hosts)
    return kept, pa.array(list(placed.values()), pa.int32()).take(where)


def robots_rows(robots, placed: dict, oldest: int):
    """A work row per robots.txt answer of ``robots`` (host, fetched_at, http_status,
    content) fetched at or after ``oldest``, of a placed host."""
    import pyarrow.compute as pc

    fresh = pc.fill_null(pc.greater_equal(robots.column("fetched_at"), oldest), False)
    kept, partitions = _of_hosts(robots, placed, fresh)
    given = {
        "host": kept.column("host"),
        "partition": partitions,
        "robots_status": kept.column("http_status"),
        "robots_body": kept.column("content"),
    }
    return work_columns(given, kept.num_rows)


def probe_rows(probes, placed: dict, oldest: int):
    """A work row per soft-404 probe answer of ``probes`` (host, probed_at) made at or
    after ``oldest``, of a placed host."""
    import pyarrow as pa
    import pyarrow.compute as pc

    fresh = pc.fill_null(pc.greater_equal(probes.column("probed_at"), oldest), False)
    kept, partitions = _of_hosts(probes, placed, fresh)
    given = {
        "host": kept.column("host"),
        "partition": partitions,
        "probed": pa.array([True] * kept.num_rows, pa.bool_()),
    }
    return work_columns(given, kept.num_rows)


def known_rows(crawldb, placed: dict):
    """A work row per URL of ``crawldb`` (url, host, last_fetch_time) of a placed host
    that an earlier round fetched. The task leaves out those it lists itself."""
    import pyarrow.compute as pc

    kept, partitions = _of_hosts(crawldb, placed, pc.is_valid(crawldb.column("last_fetch_time")))
    given = {"host": kept.column("host"), "partition": partitions, "known_url": kept.column("url")}
    return work_columns(given, kept.num_rows)


def pacing_rows(moments: dict, placed: dict):
    """A work row per placed host asked too recently to be asked at once, with the
    moment it may be asked again (``moments``: host -> epoch ms)."""
    import pyarrow as pa

    hosts = [host for host in moments if host in placed]
    given = {
        "host": pa.array(hosts, pa.string()),
        "partition": pa.array([placed[host] for host in hosts], pa.int32()),
        "not_before": pa.array([moments[host] for host in hosts], pa.int64()),
    }
    return work_columns(given, len(hosts))
