"""The metrics table ``DIR/metrics``: one row per job run, for operators and notebooks.

Every job appends the figures it prints (and writes in its segment's ``_<stage>.done``
marker) as a row: the job, its segment, when it finished, how long it took, and its
figures flattened into a map (``urls``, ``pages_per_second``, ``reasons.http_404``,
``tiers.high``, ``skew`` ...). Fetch adds per-host statistics. Rows are only ever
appended (a blind Delta append: one small write, where a MERGE costs a dozen Spark jobs
per stage), so a stage rerun on the same segment adds a newer row; ``read_metrics``
keeps the latest row of each job and segment, which is what ``readdb --stats`` and the
notebook show round by round::

    read_metrics(spark, DIR).where("job = 'fetch'")            # latest run per segment
    spark.read.format("delta").load(f"{DIR}/metrics")           # every run, reruns too
"""

from __future__ import annotations

from functools import cache

from crawldb.schema import Table
from engine.runtime import write_behind
from engine.runtime.layout import metrics_path
from engine.tables import task_files
from engine.tables.delta_files import is_delta_table
from lib.clock import now_ms

# Timed answers of a host in the latest fetch before generate plans by its median. Unit: count.
PACE_ANSWERS = 3
HOST_STATS_TYPE = (
    "STRUCT<host: STRING, urls: BIGINT, pages: BIGINT, errors: BIGINT, bytes: BIGINT,"
    " avg_ms: DOUBLE, max_ms: BIGINT, median_ms: DOUBLE, answers: BIGINT>"
)

METRICS = Table(
    "metrics",
    (
        ("job", "STRING"),  # inject, generate, fetch, parse, updatedb, dedup, rank
        ("segment", "STRING"),  # the segment it worked on, NULL for crawldb-wide jobs
        ("finished", "TIMESTAMP"),
        ("seconds", "DOUBLE"),  # wall time of the job's work
        ("figures", "MAP<STRING, DOUBLE>"),  # the job's summary, nested keys joined by "."
        ("hosts", f"ARRAY<{HOST_STATS_TYPE}>"),  # fetch: per host; NULL for other jobs
    ),
)


def flatten(summary: dict, prefix: str = "") -> dict[str, float]:
    """Numeric figures of a (nested) summary as ``{"a.b": value}``; booleans as 0/1, text
    and lists left out."""
    flat: dict[str, float] = {}
    for key, value in summary.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, bool):
            flat[name] = 1.0 if value else 0.0
        elif isinstance(value, int | float) and value is not None:
            flat[name] = float(value)
    return flat


def record(spark, root: str, job: str, segment: str | None, summary: dict, hosts=None) -> None:
    """Append one job run's figures to the metrics table, in the background
    (``engine.runtime.write_behind``). ``hosts``: None, or ``hosts()``, the per-host rows
    (``HOST_STATS_TYPE`` as dicts), called in the background."""
    seconds = float(summary.get("seconds") or 0.0)
    fields = (job, segment, now_ms(), seconds, flatten(summary))
    # Spark parses the DDL: here, on the caller's thread, while its session is sure to be up.
    write_behind.later(spark, "metrics", _append, root, fields, hosts, _stored_schema())


@cache
def _stored_schema():
    """The metrics table's Arrow schema as stored (parsed once a process)."""
    return task_files.stored_schema(METRICS)


def _append(_spark, root: str, fields: tuple, hosts, schema) -> None:
    """One row appended through delta-rs, in the driver: a Spark append of one row cost
    a dozen small Spark jobs, contending with the next stage for the driver's cores."""
    import pyarrow as pa
    from deltalake import write_deltalake
    from deltalake.transaction import CommitProperties

    job, segment, finished, seconds, figures = fields
    row = {
        "job": job,
        "segment": segment,
        "finished": finished,
        "seconds": seconds,
        "figures": list(figures.items()),
        "hosts": None if hosts is None else hosts(),
    }
    python = task_files.python_schema(schema)
    batch = task_files.as_stored(pa.RecordBatch.from_pylist([row], schema=python), schema)
    label = f"trawl metrics {job} segment={segment}"
    # schema_mode merge: a metrics table written before median_ms and answers gains them.
    write_deltalake(
        metrics_path(root),
        pa.Table.from_batches([batch]),
        mode="append",
        schema_mode="merge",
        commit_properties=CommitProperties(custom_metadata={"userMetadata": label}),
    )


def read_metrics(spark, root: str):
    """The metrics table, or None when no job has written it yet: the latest row of each
    job and segment (crawldb-wide jobs, segment NULL, keep every run)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    write_behind.wait("metrics")  # this job's own rows
    path = metrics_path(root)
    if not is_delta_table(path):
        return None
    table = spark.read.format("delta").load(path)
    newest = Window.partitionBy("job", "segment").orderBy(F.col("finished").desc())
    latest = F.col("segment").isNull() | (F.col("_newest") == 1)
    return table.withColumn("_newest", F.row_number().over(newest)).where(latest).drop("_newest")


def latest_responses(spark, root: str) -> dict[str, float]:
    """Host -> its median response time in seconds in the latest fetch (the metrics
    table's per-host ``median_ms``, for hosts with at least ``PACE_ANSWERS`` timed
    answers: one trickled page does not make a slow host); empty before the first fetch,
    or when the latest was recorded without medians. Read with delta-rs in the driver:
    the latest fetch row's hosts only."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    write_behind.wait("metrics")
    try:
        table = DeltaTable(metrics_path(root))
    except TableNotFoundError:
        return {}
    rows = table.to_pyarrow_dataset()
    fetches = ds.field("job") == "fetch"
    finished = rows.to_table(columns=["finished"], filter=fetches)["finished"]
    if len(finished) == 0:
        return {}
    latest = rows.to_table(
        columns=["hosts"], filter=fetches & (ds.field("finished") == pc.max(finished))
    )
    hosts = latest["hosts"][0].as_py() or []
    return {
        h["host"]: h["median_ms"] / 1000.0
        for h in hosts
        if (h.get("answers") or 0) >= PACE_ANSWERS and h.get("median_ms") is not None
    }
