"""The metrics table ``DIR/metrics``: one row per job run, for operators and notebooks.

Every job appends the figures it prints (and writes in its segment's ``_<stage>.done``
marker) as a row: the job, its segment, when it finished, how long it took, and its
figures flattened into a map (``urls``, ``pages_per_second``, ``reasons.http_404``,
``tiers.high``, ``skew`` ...). Fetch adds per-host statistics. A stage rerun on the same
segment replaces its row (one Delta MERGE on job and segment), so the table has one row
per job and segment and ``readdb --stats`` and the notebook can follow a crawl round by
round::

    spark.read.format("delta").load(f"{DIR}/metrics").where("job = 'fetch'")
"""

from __future__ import annotations

from crawldb.schema import Table
from jobs.common import delta_commit_message, now_ms
from lib.storage import join

HOST_STATS_TYPE = (
    "STRUCT<host: STRING, urls: BIGINT, pages: BIGINT, errors: BIGINT, bytes: BIGINT,"
    " avg_ms: DOUBLE, max_ms: BIGINT>"
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


def metrics_path(root: str) -> str:
    """Path of the metrics table of the data directory at ``root``."""
    return join(root, "metrics")


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
    """Write one job run's figures to the metrics table (``hosts``: a DataFrame of
    ``HOST_STATS_TYPE`` rows, or None)."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    figures = flatten(summary)
    row = spark.createDataFrame(
        [(job, segment, now_ms(), float(summary.get("seconds") or 0.0), figures)],
        "job STRING, segment STRING, finished BIGINT, seconds DOUBLE, figures MAP<STRING, DOUBLE>",
    ).withColumn("finished", F.timestamp_millis("finished"))
    if hosts is None:
        row = row.withColumn("hosts", F.lit(None).cast(f"ARRAY<{HOST_STATS_TYPE}>"))
    else:
        collected = hosts.select(F.collect_list(F.struct(*hosts.columns)).alias("hosts"))
        row = row.crossJoin(collected.select(F.col("hosts").cast(f"ARRAY<{HOST_STATS_TYPE}>")))
    path = metrics_path(root)
    with delta_commit_message(spark, f"trawl metrics {job} segment={segment}"):
        if not DeltaTable.isDeltaTable(spark, path):
            row.write.format("delta").mode("append").save(path)
            return
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(
                row.alias("s"), "s.segment IS NOT NULL AND t.job = s.job AND t.segment = s.segment"
            )
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )


def read_metrics(spark, root: str):
    """The metrics table, or None when no job has written it yet."""
    from delta.tables import DeltaTable

    path = metrics_path(root)
    if not DeltaTable.isDeltaTable(spark, path):
        return None
    return spark.read.format("delta").load(path)
