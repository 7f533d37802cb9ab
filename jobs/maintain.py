"""maintain: keep a long crawl fast and small (Delta OPTIMIZE and VACUUM, segment retention).

Usage: ``submit.sh maintain --data DIR``. Each step runs when its threshold says so:

- compaction: the crawldb's active files are compacted (Delta OPTIMIZE, optionally
  Z-ordered by host, ``db.compact.zorder``) when there are more than
  ``db.compact.files`` of them: every round's rewrite adds a few small files;
- VACUUM: files no version younger than ``db.retention.hours`` needs are deleted from
  the crawldb, the robots.txt and soft-404 caches and the metrics table, at most once
  every ``db.vacuum.interval.hours``: time travel reaches back ``db.retention.hours``;
- segment retention: the tables (fetch list, fetch, parse, sitemaps) of the segments
  older than the newest ``segments.retention.count`` that are fully applied are
  removed; their WARC and CDXJ files stay unless ``segments.retention.archive``.

It holds the data directory's lock as every writer does, so it never runs beside
another job; ``crawl`` runs it after a round when a threshold is reached
(``crawl.maintain``, on by default). What it did is
in ``DIR/_maintained.json`` and the metrics table (job ``maintain``).
"""

from __future__ import annotations

import json
import sys
import time

from engine.runtime import write_behind
from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import STAGES, DataDir, crawldb_required
from engine.runtime.progress import progress
from engine.runtime.session import session_conf
from engine.tables.delta_commits import delta_commit_message
from engine.tables.delta_files import is_delta_table
from engine.tables.metrics import record
from lib.clock import Stopwatch
from lib.storage import join

MARKER = "_maintained.json"


def build_parser():
    """Command line of the job."""
    return job_parser("maintain", __doc__.splitlines()[0])


def run(spark, conf, args) -> int:
    """Maintain the data directory."""
    maintain(spark, conf, DataDir.at(args.data, conf))
    return 0


def maintain(spark, conf, data: DataDir) -> dict:
    """Run the steps whose thresholds are reached; their figures."""
    clock = Stopwatch()
    state = _state(data)
    summary = {
        "compacted_files": compact(spark, conf, data),
        "segments_removed": retire_segments(conf, data),
        "vacuumed_files": 0,
    }
    if vacuum_due(conf, data, state):
        summary["vacuumed_files"] = vacuum(spark, data, conf["db.retention.hours"])
        state["vacuumed_at"] = time.time()
        data.storage.write_atomic(data.path(MARKER), json.dumps(state).encode("utf-8"))
    summary["seconds"] = round(clock.seconds, 1)
    record(spark, data.root, "maintain", None, summary)
    progress("maintain", [(key, value) for key, value in summary.items() if key != "seconds"])
    return summary


def due(conf, data: DataDir) -> bool:
    """Whether a step's threshold is reached (crawl's look after a round: no Spark job)."""
    from deltalake import DeltaTable

    crawldb = DeltaTable(data.crawldb)  # its log read once for both thresholds
    limit = conf["db.compact.files"]
    if limit >= 0 and len(crawldb.file_uris()) > limit:
        return True
    if conf["segments.retention.count"] >= 0 and _retired(conf, data):
        return True
    return vacuum_due(conf, data, _state(data), crawldb)


def vacuum_due(conf, data: DataDir, state: dict, crawldb=None) -> bool:
    """VACUUM is due when it is on, was not run for ``db.vacuum.interval.hours``, and the
    crawldb has history older than ``db.retention.hours`` (else it could delete nothing).
    ``crawldb``: the crawldb's delta-rs table when the caller has it open."""
    from deltalake import DeltaTable

    hours = conf["db.retention.hours"]
    if hours < 0:
        return False
    now = time.time()
    if now - state.get("vacuumed_at", 0) < conf["db.vacuum.interval.hours"] * 3600:
        return False
    crawldb = crawldb or DeltaTable(data.crawldb)
    first = crawldb.history()[-1]["timestamp"] / 1000
    return now - first > hours * 3600


def _state(data: DataDir) -> dict:
    path = data.path(MARKER)
    return json.loads(data.storage.read_bytes(path)) if data.storage.exists(path) else {}


def compact(spark, conf, data: DataDir) -> int:
    """OPTIMIZE the crawldb when it has more active files than ``db.compact.files``;
    how many files it had (0: not compacted)."""
    from deltalake import DeltaTable

    limit = conf["db.compact.files"]
    files = len(DeltaTable(data.crawldb).file_uris())
    if limit < 0 or files <= limit:
        return 0
    zorder = " ZORDER BY (host)" if conf["db.compact.zorder"] else ""
    with delta_commit_message(spark, "trawl maintain optimize"):
        spark.sql(f"OPTIMIZE delta.`{data.crawldb}`{zorder}").collect()
    return files


def vacuum(spark, data: DataDir, hours: int) -> int:
    """VACUUM the data directory's tables, keeping ``hours`` of history; files deleted.
    By delta-rs, in the driver, without Spark's jobs and their fixed cost
    (docs/operating.md, "Housekeeping"); Spark's for a table whose protocol delta-rs
    cannot write."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaProtocolError

    write_behind.wait()  # a metrics row still being written must not lose its file
    deleted = 0
    for path in (data.crawldb, data.robots, data.soft404, data.metrics):
        if not is_delta_table(path):
            continue
        try:
            table = DeltaTable(path)
            removed = table.vacuum(
                retention_hours=hours, dry_run=False, enforce_retention_duration=False
            )
        except DeltaProtocolError:
            removed = _spark_vacuum(spark, path, hours)
        deleted += len(removed)
    return deleted


def _spark_vacuum(spark, path: str, hours: int) -> list:
    """Spark's VACUUM of one table, keeping ``hours`` of history; the files deleted."""
    settings = {"spark.databricks.delta.retentionDurationCheck.enabled": "false"}
    with session_conf(spark, settings):
        removed = spark.sql(f"VACUUM delta.`{path}` RETAIN {hours} HOURS DRY RUN").collect()
        spark.sql(f"VACUUM delta.`{path}` RETAIN {hours} HOURS").collect()
    return removed


def _retired(conf, data: DataDir) -> list[str]:
    """Applied segments older than the newest ``segments.retention.count`` that still
    hold folders the policy removes."""
    keep = conf["segments.retention.count"]
    names = [name for name in data.segment_names() if data.segment(name).done(STAGES[-1])]
    return [
        name
        for name in names[: max(len(names) - keep, 0)]
        if any(data.storage.exists(join(data.segment(name).path, f)) for f in _folders(conf))
    ]


def _folders(conf) -> list[str]:
    tables = ["fetchlist", "fetch", "parse", "sitemaps"]
    return tables + (["warc", "cdxj"] if conf["segments.retention.archive"] else [])


def retire_segments(conf, data: DataDir) -> int:
    """Remove the tables of applied segments older than the newest
    ``segments.retention.count`` (their archive too with ``segments.retention.archive``);
    how many segments."""
    if conf["segments.retention.count"] < 0:
        return 0
    retired = _retired(conf, data)
    for name in retired:
        for folder in _folders(conf):
            data.storage.delete(join(data.segment(name).path, folder))
    return len(retired)


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("maintain", build_parser(), run, argv, crawldb_required)


if __name__ == "__main__":
    sys.exit(main())
