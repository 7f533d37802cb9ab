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

from crawldb.schema import Table
from jobs import write_behind
from jobs.common import delta_commit_message, now_ms
from jobs.delta_files import read_current
from lib.storage import join

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
    """Append one job run's figures to the metrics table, in the background
    (``jobs.write_behind``). ``hosts``: None, or ``hosts(session)``, a DataFrame of
    ``HOST_STATS_TYPE`` rows built from that session."""
    seconds = float(summary.get("seconds") or 0.0)
    fields = (job, segment, now_ms(), seconds, flatten(summary))
    write_behind.later(spark, "metrics", _append, root, fields, hosts)


def _append(spark, root: str, fields: tuple, hosts) -> None:
    from pyspark.sql import functions as F

    job, segment = fields[:2]
    row = spark.createDataFrame(
        [fields],
        "job STRING, segment STRING, finished BIGINT, seconds DOUBLE, figures MAP<STRING, DOUBLE>",
    ).withColumn("finished", F.timestamp_millis("finished"))
    if hosts is None:
        row = row.withColumn("hosts", F.lit(None).cast(f"ARRAY<{HOST_STATS_TYPE}>"))
    else:
        stats = hosts(spark)
        collected = stats.select(F.collect_list(F.struct(*stats.columns)).alias("hosts"))
        row = row.crossJoin(collected.select(F.col("hosts").cast(f"ARRAY<{HOST_STATS_TYPE}>")))
    with delta_commit_message(spark, f"trawl metrics {job} segment={segment}"):
        # mergeSchema: a metrics table written before median_ms and answers gains them.
        writer = row.write.format("delta").mode("append").option("mergeSchema", "true")
        writer.save(metrics_path(root))


def read_metrics(spark, root: str):
    """The metrics table, or None when no job has written it yet: the latest row of each
    job and segment (crawldb-wide jobs, segment NULL, keep every run)."""
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    write_behind.wait("metrics")  # this job's own rows
    path = metrics_path(root)
    if not DeltaTable.isDeltaTable(spark, path):
        return None
    table = spark.read.format("delta").load(path)
    newest = Window.partitionBy("job", "segment").orderBy(F.col("finished").desc())
    latest = F.col("segment").isNull() | (F.col("_newest") == 1)
    return table.withColumn("_newest", F.row_number().over(newest)).where(latest).drop("_newest")


def latest_responses(spark, root: str) -> dict[str, float]:
    """Host -> its median response time in seconds in the latest fetch (the metrics
    table's per-host ``median_ms``, for hosts with at least ``PACE_ANSWERS`` timed
    answers: one trickled page does not make a slow host); empty before the first fetch,
    or when the latest was recorded without medians."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    write_behind.wait("metrics")
    path = metrics_path(root)
    if not DeltaTable.isDeltaTable(spark, path):
        return {}
    fetches = read_current(spark, path).where(F.col("job") == "fetch")
    if "answers" not in fetches.schema["hosts"].dataType.elementType.names:
        return {}
    latest = fetches.orderBy(F.col("finished").desc()).limit(1)
    hosts = latest.select(F.explode("hosts").alias("h")).select("h.*")
    known = hosts.where((F.col("answers") >= PACE_ANSWERS) & F.col("median_ms").isNotNull())
    return {r["host"]: r["median_ms"] / 1000.0 for r in known.collect()}
