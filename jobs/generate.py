"""generate: select due URLs into a new segment's fetch list (data flow step 2).

Usage: ``submit.sh generate --data DIR [--adddays N]``. A URL is due when its
``fetch_time`` is at or before now (plus ``--adddays``) and its score is at least
``generate.min.score``. Highest priority first (``crawldb.priority``: importance,
staleness, change rate, depth, failures): at most ``generate.max.count`` per host (or
domain), and ``generate.topN`` in all, shared among the high, medium and low tiers.
With ``generate.update.crawldb`` the URLs are stamped in the crawldb and not generated
again until updatedb applies the segment (or ``crawl.gen.delay`` passes). The fetch list
is partitioned by host, so that all URLs of one host are in one partition and no two
fetch tasks ever talk to the same host.
With ``generate.filter`` (as Nutch's; off by default, as Nutch's bin/crawl runs it), the
URL filters (built-in and ``urlfilter.plugins``) are applied again to the due URLs: rules
changed since a URL entered the crawldb keep it out of the fetch list (its row stays).
Exit code 1 when nothing is due (as Nutch's Generator), with no segment written.
"""

from __future__ import annotations

import json
import sys
from functools import partial

from crawldb.partitioning import assign_partitions, host_cost, partition_loads, skew
from crawldb.priority import TIERS, check_weights
from crawldb.schedule import shifted_now
from crawldb.schema import FETCHLIST
from engine.executors import generate_plan
from engine.executors.submissions import inject_pending, without_cancelled
from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import DataDir, crawldb_required
from engine.runtime.progress import progress
from engine.tables import task_files
from engine.tables.delta_files import read_current
from engine.tables.metrics import record
from engine.tables.store import merge_rows, read_crawldb
from lib.clock import Stopwatch, now_ms


def build_parser():
    """Command line of the job."""
    parser = job_parser("generate", __doc__.splitlines()[0])
    parser.add_argument(
        "--adddays", type=float, default=0.0, help="pretend the clock is N days ahead"
    )
    return parser


def run(spark, conf, args) -> int:
    """Generate one segment; 0 when written, 1 when nothing was due."""
    return 0 if generate(spark, conf, DataDir.at(args.data, conf), args.adddays) else 1


def fetch_partitions(spark, conf) -> int:
    """How many fetch partitions a fetch list has (``fetcher.partitions``)."""
    configured = conf["fetcher.partitions"]
    return configured if configured > 0 else spark.sparkContext.defaultParallelism


def generate(spark, conf, data: DataDir, add_days: float = 0.0) -> str | None:
    """Write a new segment's fetch list; returns its name, or None when nothing is due. A
    small crawldb's fetch list is selected in the driver (``engine.executors.generate_plan``)."""
    clock = Stopwatch()
    check_weights(conf)
    now = shifted_now(now_ms(), add_days)
    settings = conf.as_dict()
    if generate_plan.in_driver(settings, data):
        plan, held = generate_plan.driver_plan(spark, settings, data, now), []
    else:
        plan, held = spark_plan(spark, conf, data, now)
    count = sum(urls for urls, _ in plan.per_host.values())
    if count == 0:
        for frame in held:
            frame.unpersist()
        progress("generate", [("urls due", 0)])
        return None
    name = data.new_segment_name()
    segment = data.segment(name)
    partitions = fetch_partitions(spark, conf)
    placed, skew_expected = place_hosts(plan.per_host, partitions)
    message = f"trawl generate segment={name}"
    if held:
        tiers = write_planned(spark, conf, data, segment, (plan, placed, partitions, held), now)
    else:
        tiers = generate_plan.write_fetchlist(spark, segment, plan.rows, placed, message)
    tiers = {t: tiers.get(t, 0) for t in TIERS}
    count = sum(tiers.values())  # as written
    summary = {"urls": count, "hosts": len(placed), "partitions": partitions, "tiers": tiers}
    # URLs of slow hosts left for later rounds, so that the round's hosts finish together.
    summary["spread"] = plan.due_count - count
    summary = {**summary, "skew_expected": skew_expected, "seconds": round(clock.seconds, 1)}
    segment.mark("generated", summary)
    record(spark, data.root, "generate", name, summary)
    progress(
        "generate",
        [
            ("urls", count),
            ("hosts", len(placed)),
            *tiers.items(),
            ("spread to later rounds", summary["spread"]),
            ("skew", skew_expected),
            ("segment", name),
        ],
    )
    return name


def spark_plan(spark, conf, data: DataDir, now: int):
    """The fetch plan by Spark's tasks (``plan.rows``: a DataFrame), and the frames it
    cached, to release once the fetch list is written."""
    inject_pending(spark, conf, data)  # what the crawl-job API received since last round
    crawldb = without_cancelled(spark, data, read_crawldb(spark, data))
    held = []
    return generate_plan.spark_plan(spark, conf, data, crawldb, now, held), held


def write_planned(spark, conf, data: DataDir, segment, planned, now: int) -> dict:
    """Write the fetch list of Spark's plan (``planned``: the plan, its hosts' partitions,
    its partition count, its cached frames), release the frames, stamp the crawldb at ``now``
    (``generate.update.crawldb``); returns its URLs by tier."""
    plan, placed, partitions, held = planned
    message = f"trawl generate segment={segment.name}"
    # Each row's partition is its host's, looked up by the task writing it (no join).
    shared = spark.sparkContext.broadcast(placed)
    rows = plan.rows.repartition(partitions, "host")
    tiers = write_fetchlist_by_tasks(spark, segment, rows, shared, message)
    shared.destroy()
    # Dropped before mark_generated's commit, which would re-plan them (they read the crawldb).
    for frame in held:
        frame.unpersist()
    if conf["generate.update.crawldb"]:
        mark_generated(spark, data, segment, now)
    return tiers


def write_fetchlist_by_tasks(spark, segment, rows, placed, message: str) -> dict[str, int]:
    """Write the segment's fetch list table, a file per partition of ``rows`` (the
    plan's) written by its task (``engine.tables.task_files``), each row with its
    host's fetch partition (``placed``: a broadcast of host -> partition), in one commit
    labelled ``message``; returns its URLs by tier, counted by the tasks."""
    from collections import Counter

    table = segment.table("fetchlist")
    stored = task_files.stored_schema(FETCHLIST)
    run = task_files.new_run(segment.storage, table)
    compression = spark.conf.get("spark.sql.parquet.compression.codec")
    task = partial(_fetchlist_task, segment.storage, table, run, stored, compression, placed)
    files = [row.asDict() for row in rows.mapInArrow(task, task_files.FILE_DDL).collect()]
    task_files.commit(segment.storage, table, run, files, stored, message)
    tiers = Counter()
    for file in files:
        tiers.update(json.loads(file["figures"]))
    return dict(tiers)


def _fetchlist_task(storage, table: str, run: str, stored, compression: str, placed, batches):
    """Task side: this partition's fetch list rows, each with its host's partition, to
    one file, with its tier counts."""
    from collections import Counter

    tiers = Counter()
    yield from task_files.write_spark_batches(
        storage,
        table,
        run,
        stored,
        compression,
        (generate_plan.with_partitions(batch, placed.value) for batch in batches),
        lambda: dict(tiers),
        lambda batch: tiers.update(batch.column("tier").to_pylist()),
    )


def place_hosts(per_host: dict[str, tuple[int, float]], partitions: int):
    """Host -> fetch partition by expected fetch time (crawldb.partitioning), and the
    expected skew (slowest partition over the median)."""
    costs = {host: host_cost(urls, pace) for host, (urls, pace) in per_host.items()}
    placed = assign_partitions(costs, partitions)
    return placed, skew(partition_loads(costs, placed, partitions))


def mark_generated(spark, data: DataDir, segment, now: int) -> None:
    """Stamp the fetch list's URLs with ``generate_time`` (generate.update.crawldb), by
    the crawldb's upsert (``merge_rows``: a Delta MERGE would end its buckets)."""
    from pyspark.sql import functions as F

    listed = read_current(spark, segment.table("fetchlist")).select("url")
    stamped = read_crawldb(spark, data).join(listed, "url", "left_semi")
    stamped = stamped.withColumn("generate_time", F.timestamp_millis(F.lit(now)))
    merge_rows(spark, data, stamped, f"trawl generate mark segment={segment.name}")


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("generate", build_parser(), run, argv, crawldb_required)


if __name__ == "__main__":
    sys.exit(main())
