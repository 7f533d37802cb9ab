"""fetch: fetch a segment's fetch list, politely, partition by partition (data flow step 3).

Usage: ``submit.sh fetch --data DIR [--segment NAME]`` (default: the oldest segment
generated but not fetched). Each Spark task fetches one host-partitioned slice with
``lib.fetching.fetcher.PartitionFetcher`` and writes one WARC file; results go to the segment's
``fetch`` table. With ``fetcher.parse`` (the default) each task also parses its pages
(``engine.executors.task_parse``) into the segment's ``parse`` table: the segment is then
parsed too.
"""

from __future__ import annotations

import itertools
import sys
from functools import partial

from crawldb.schema import FETCH, PARSE, SITEMAPS
from engine.caches.robots_cache import store_robots
from engine.executors import fetch_work
from engine.executors.fetch_figures import FetchFigures, fetch_summary
from engine.executors.task_parse import TaskParser, commit_parsed, finish_parse
from engine.runtime import write_behind
from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import (
    DataDir,
    Segment,
    add_segment_option,
    run_on_segment,
    segment_required,
    storage_of,
)
from engine.runtime.progress import PROGRESS_KEY, StageProgress, progress
from engine.runtime.session import session_conf
from engine.tables import arrow, task_files
from engine.tables.delta_commits import delta_commit_message
from engine.tables.metrics import record
from lib import vocabulary as st
from lib.archive.warc import WarcFile
from lib.clock import Stopwatch, now_ms
from lib.fetching.fetcher import PartitionFetcher
from lib.fetching.http import user_agent
from lib.fetching.tasks import CachedRobots
from lib.progress import ProgressFile, read_progress
from lib.storage import basename, join
from lib.vocabulary import (
    ORIGIN_FETCHLIST,
    ORIGIN_OUTLINK,
    ORIGIN_PROBE,
    ORIGIN_ROBOTS,
    ORIGIN_SITEMAP,
)

# What the fetch tasks import (``engine.executors.task_parse`` parses in them: ``fetcher.parse``;
# the fingerprints' compiled kernel is loaded, or compiled once, before the first page).
WORKER_MODULES = ("jobs.fetch", "engine.executors.task_parse", "lib.content.fingerprint_kernel")
# The segment's tables the fetch tasks write files of.
SEGMENT_TABLES = {"fetch": FETCH, "parse": PARSE, "sitemaps": SITEMAPS}


def build_parser():
    """Command line of the job."""
    parser = job_parser("fetch", __doc__.splitlines()[0])
    add_segment_option(parser)
    return parser


def run(spark, conf, args) -> int:
    """Fetch one segment; 1 when there is none to fetch."""

    return run_on_segment(
        args, conf, "fetched", lambda data, segment: fetch(spark, conf, data, segment)
    )


def fetch(spark, conf, data: DataDir, segment: Segment) -> dict:
    """Fetch the segment's fetch list into its fetch table and WARC files."""
    clock = Stopwatch()
    warming = arrow.warm_workers(spark, WORKER_MODULES)
    generated = segment.summary("generated")
    partitions = generated["partitions"]
    work = fetch_work.work_frame(spark, conf.as_dict(), data, segment, partitions)
    table = segment.table("fetch")
    run = task_files.new_run(segment.storage, *(segment.table(t) for t in SEGMENT_TABLES))
    # Spark parses the schemas' DDL: on the driver, not in the tasks.
    stored = {name: task_files.stored_schema(kind) for name, kind in SEGMENT_TABLES.items()}
    task = partial(fetch_arrow, conf.as_dict(), segment.path, run, stored)
    placed = work.repartitionById(partitions, "partition")
    files = placed.mapInArrow(task, task_files.FILE_DDL)
    watch = StageProgress(
        "fetch", "URLs", fetch_progress(segment, generated["urls"]), conf[PROGRESS_KEY]
    )
    message = f"trawl fetch segment={segment.name}"
    with (
        delta_commit_message(spark, message),
        session_conf(spark, arrow.BATCH_LIMITS),
        watch,
    ):
        written = [row.asDict() for row in files.collect()]
    fetched = [row for row in written if row["table"] == "fetch"]
    task_files.commit(segment.storage, table, run, fetched, stored["fetch"], message)
    warming.join()
    segment.storage.delete(segment.progress_dir)
    remove_failed_attempts(segment)
    summary = fetch_summary(fetched, clock.seconds)
    if summary["robots_answers"]:
        write_behind.later(spark, "robots", store_robots, data, segment.table("fetch"))
    parsed = commit_parsed(segment, run, written, stored) if conf["fetcher.parse"] else None
    segment.mark("fetched", summary)
    stats = partial(host_stats, segment.table("fetch"))
    record(spark, data.root, "fetch", segment.name, summary, stats)
    fetch_line(summary)
    if parsed is not None:
        finish_parse(spark, segment, parsed)
    return summary


def fetch_line(summary: dict) -> None:
    """The fetch job's progress line."""
    progress(
        "fetch",
        [
            ("urls", summary["urls"]),
            ("pages", summary["pages"]),
            ("errors", summary["errors"]),
            ("deferred", summary["deferred"]),
            ("bytes", summary["bytes"]),
            ("pages/s", summary["pages_per_second"]),
            ("s", summary["seconds"]),
        ],
    )


def fetch_progress(segment: Segment, listed: int):
    """``() -> (URLs done, URLs to do, ETA, note)`` from the tasks' progress files: the
    fetch list's URLs and the links followed so far (fetcher.follow.outlinks.depth); the
    ETA the tasks project from their hosts' queues and pauses (``lib.fetching.roundtail``), and
    the URLs deferred and the hosts holding the round."""

    def figures() -> tuple[int, int, float | None, str]:
        totals = read_progress(segment.storage, segment.progress_dir)
        eta = None if totals.eta_at is None else max(totals.eta_at - now_ms() / 1000, 0.0)
        return totals.done, listed + totals.added, eta, totals.note()

    return figures


def remove_failed_attempts(segment: Segment) -> None:
    """Delete the WARC files of task attempts that failed (killed before they could)."""
    for name in segment.storage.list_files(segment.warc_dir):
        if ".inprogress-" in name:
            segment.storage.delete(join(segment.warc_dir, name))


def fetch_arrow(conf: dict, segment_path: str, run: str, stored: dict, batches):
    """Spark task (``mapInArrow``, see ``engine.tables.arrow``): the work rows of one partition
    in (each in its ``partition``: ``repartitionById``); its fetch-table rows go to a
    Parquet file of its own (``engine.tables.task_files``; ``stored``: the segment tables' Arrow
    schemas), and so do its parse rows (``fetcher.parse``); each file's name, size and
    row count come out. A partition with no work writes no file."""
    from pyspark import TaskContext

    context = TaskContext.get()
    index, attempt = context.partitionId(), context.attemptNumber()
    segment = Segment(segment_path, storage_of(segment_path, conf))
    rows = fetch_partition(conf, segment, index, attempt, arrow.rows_of(batches))
    first = next(rows, None)
    if first is None:
        return
    rows = itertools.chain([first], rows)
    parser = None
    if conf["fetcher.parse"]:
        parser = TaskParser(conf, segment, (run, index, attempt), stored)
        rows = parser.tee(rows)
    counted = FetchFigures()
    batches = task_files.stored_batches(counted.of_rows(rows), stored["fetch"], "content")
    compression = conf["spark.sql.parquet.compression.codec"]
    path = task_files.task_file(segment.table("fetch"), run, index, attempt, compression)
    yield from task_files.write_task_file(
        segment.storage, path, batches, stored["fetch"], compression, counted.figures
    )
    if parser is not None:
        yield from parser.files()


def fetch_partition(conf: dict, segment: Segment, index: int, attempt: int, rows):
    """Fetch one partition's work rows (dicts), write its WARC file, yield result rows."""
    items, cache, probed, known, paced = [], {}, set(), set(), {}
    for row in rows:
        if row["url"] is not None:
            items.append(row)
        elif row["known_url"] is not None:
            known.add(row["known_url"])
        elif row.get("not_before") is not None:
            paced[row["host"]] = row["not_before"] / 1000
        elif row["probed"]:
            probed.add(row["host"])
        else:
            cache[row["host"]] = CachedRobots(row["robots_status"], bytes(row["robots_body"]))
    if not items:
        return
    known.difference_update(row["url"] for row in items)  # listed: fetched this round anyway
    # Best first within each host: what the round's end defers is the least wanted, and
    # URLs deferred last round (all in the high tier) are not deferred again.
    items.sort(key=lambda row: (row["tier"] != "high", -(row["priority"] or 0.0)))
    storage = segment.storage
    name = join(segment.warc_dir, f"trawl-{segment.name}-{index:05d}.warc.gz")
    warc = WarcFile(name, _warcinfo(conf, segment.name), attempt=attempt, storage=storage)
    path = join(segment.progress_dir, f"part-{index:05d}.json")
    progress = ProgressFile(storage, path, len(items), conf[PROGRESS_KEY])
    fetcher = PartitionFetcher(conf, warc, cache, attempt, probed, known, not_before=paced)
    try:
        for row in fetcher.run(items):
            if row["origin"] in (ORIGIN_FETCHLIST, ORIGIN_OUTLINK):
                progress.added, progress.deferred = fetcher.followed, fetcher.deferred
                progress.eta_at, progress.holding = fetcher.eta_at, fetcher.holding
                progress.advance()
            yield row
    except BaseException:
        warc.abort()
        raise
    warc.close()
    cdxj = join(segment.cdxj_dir, f"{basename(name)}.cdxj")
    storage.write_atomic(cdxj, warc.cdxj().encode())
    progress.finish()


def _warcinfo(conf: dict, segment: str) -> dict[str, str]:
    return {
        "software": f"Trawl/{conf['http.agent.version']}",
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        "isPartOf": segment,
        "http-header-user-agent": user_agent(conf),
        "robots": "classic",
    }


def host_stats(path: str) -> list[dict]:
    """Per host of the fetch table at ``path``: URLs tried, pages fetched, errors, bytes,
    response times (mean, slowest, median: the metrics table's ``hosts`` column). Read
    and grouped with delta-rs and pyarrow in the driver: a few columns of one segment."""
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    columns = ["host", "origin", "fetch_status", "content_length", "duration_ms"]
    table = DeltaTable(path).to_pyarrow_table(columns=columns)
    skipped = pa_values((ORIGIN_ROBOTS, ORIGIN_SITEMAP, ORIGIN_PROBE))
    table = table.filter(pc.invert(pc.is_in(table["origin"], value_set=skipped)))
    status = table["fetch_status"]
    table = table.append_column("ok", pc.cast(pc.equal(status, st.SUCCESS), "int64"))
    failed = pc.is_in(status, value_set=pa_values((st.RETRY, st.NOT_FOUND)))
    table = table.append_column("failed", pc.cast(failed, "int64"))
    grouped = table.group_by("host").aggregate(
        [
            ("host", "count"),
            ("ok", "sum"),
            ("failed", "sum"),
            ("content_length", "sum"),  # any answer's body
            ("duration_ms", "mean"),
            ("duration_ms", "max"),
            ("duration_ms", "approximate_median"),
            ("duration_ms", "count"),  # the rows with an exchange timed
        ]
    )
    return [
        {
            "host": row["host"],
            "urls": row["host_count"],
            "pages": row["ok_sum"] or 0,
            "errors": row["failed_sum"] or 0,
            "bytes": row["content_length_sum"] or 0,
            "avg_ms": row["duration_ms_mean"],
            "max_ms": row["duration_ms_max"],
            "median_ms": row["duration_ms_approximate_median"],
            "answers": row["duration_ms_count"],
        }
        for row in grouped.to_pylist()
    ]


def pa_values(values: tuple[str, ...]):
    """An Arrow array of strings, for ``is_in``."""
    import pyarrow as pa

    return pa.array(values, pa.string())


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("fetch", build_parser(), run, argv, segment_required)


if __name__ == "__main__":
    sys.exit(main())
