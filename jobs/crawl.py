"""crawl: inject once, then N rounds of generate -> fetch -> parse -> updatedb.

Usage: ``submit.sh crawl [--seeds FILE] --rounds N --data DIR [--adddays N]``.
``--seeds`` may be left out once the crawldb exists. Before the first round, a segment
left unfinished by an earlier run (killed, or failed) is finished first, from the stage
where it stopped. Prints one progress line per stage. Stops early when nothing is due;
after its last round, says how many URLs are due for a later crawl.
"""

from __future__ import annotations

import gc
import sys

from crawldb.schedule import shifted_now
from engine.executors.generate_plan import due_left
from engine.executors.round_dedup import mark_round
from engine.executors.submissions import inject_pending
from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import DEDUPED, STAGES, DataDir, Segment, require_crawldb, require_file
from engine.tables import arrow, prometheus
from engine.tables.store import crawldb_exists
from jobs.dedup import dedup_segment
from jobs.fetch import WORKER_MODULES, fetch
from jobs.generate import generate
from jobs.inject import inject
from jobs.maintain import due as maintenance_due
from jobs.maintain import maintain
from jobs.parse import parse
from jobs.updatedb import updatedb
from lib.clock import Stopwatch, now_ms
from lib.storage import join


def build_parser():
    """Command line of the job."""
    parser = job_parser("crawl", __doc__.splitlines()[0])
    parser.add_argument("--seeds", help="seed file to inject first (optional once crawled)")
    parser.add_argument("--rounds", type=int, required=True, help="number of rounds")
    parser.add_argument(
        "--adddays", type=float, default=0.0, help="pretend the clock is N days ahead"
    )
    return parser


def run(spark, conf, args) -> int:
    """Run the crawl; 0 on success."""
    data = DataDir.at(args.data, conf)
    # The Python workers start (seconds on a cold session, on every core) while the
    # driver and the JVM plan inject and generate.
    warming = arrow.warm_workers(spark, (*WORKER_MODULES, "engine.tables.file_rewrite"))
    if args.seeds:
        inject(spark, conf, data, args.seeds)
    elif not crawldb_exists(spark, data) and not inject_pending(spark, conf, data):
        print(
            f"crawl: no crawldb at {data.crawldb}; give --seeds FILE (or submit URLs to the API)",
            file=sys.stderr,
        )
        return 2
    for name in unfinished_segments(data, conf):
        print(f"crawl: finishing segment {name} left unfinished", flush=True)
        finish_segment(spark, conf, data, data.segment(name))
    for number in range(1, args.rounds + 1):
        print(f"round {number}/{args.rounds}", flush=True)
        name = generate(spark, conf, data, args.adddays)
        if name is None:
            print("crawl: nothing due, stopping", flush=True)
            break
        finish_segment(spark, conf, data, data.segment(name))
        if conf["crawl.maintain"] and maintenance_due(conf, data):
            maintain(spark, conf, data)
        prometheus.after_round(conf, data.root)
        # The round's DataFrames left in reference cycles hold their JVM query plans
        # (through py4j) until CPython's rare full collection: free them every round.
        gc.collect()
    else:
        if args.rounds:
            left_line(spark, conf, data, args)
    warming.join()  # a crawl with nothing due ends before the workers are up
    return 0


def left_line(spark, conf, data: DataDir, args) -> None:
    """After the last round: the URLs due that a later crawl would fetch (new links, and
    those spread or deferred by the rounds' budgets), so that none is left unsaid."""
    due, deferred = due_left(spark, conf.as_dict(), data, shifted_now(now_ms(), args.adddays))
    if due:
        print(
            f"crawl: {due} URLs due were left for a later crawl ({deferred} of them deferred "
            "by a round's tail): crawl --rounds N goes on with them",
            flush=True,
        )


def unfinished_segments(data: DataDir, conf) -> list[str]:
    """Segments generated but not yet applied to the crawldb (or, with ``crawl.dedup``,
    applied but not de-duplicated: a round killed between the two), oldest first."""
    last = DEDUPED if conf["crawl.dedup"] else "updated"
    return [
        name
        for name in data.segment_names()
        if data.segment(name).done("generated") and not data.segment(name).done(last)
    ]


def finish_segment(spark, conf, data: DataDir, segment: Segment) -> None:
    """Run the stages of a segment that are not done yet, in order."""
    stages = {
        "fetched": lambda: fetch(spark, conf, data, segment),
        "parsed": lambda: parse(spark, conf, segment),
        "updated": lambda: updatedb(spark, conf, data, segment, conf["crawl.dedup"]),
    }
    for stage in STAGES[1:]:
        if not segment.done(stage):
            stages[stage]()
    # Marked by updatedb's commit, but for a segment updated without (by updatedb
    # alone, or a run killed between its commit and its marker).
    if conf["crawl.dedup"] and not segment.done(DEDUPED):
        dedup_round(spark, conf, data, segment)


def dedup_round(spark, conf, data: DataDir, segment: Segment) -> None:
    """Mark the round's duplicates (``jobs.dedup.dedup_segment``); the segment's
    ``_deduped.done`` says it is done, so that a rerun after a kill does it once."""
    clock = Stopwatch()
    summary = dedup_segment(spark, conf.as_dict(), data, segment.name)
    summary["seconds"] = round(clock.seconds, 1)
    mark_round(spark, data.root, segment, summary)


def check(conf, args) -> None:
    """Before Spark starts: the seed file exists, or without one, the crawldb does (or
    the API has submissions to inject)."""
    data = DataDir.at(args.data, conf)
    if args.seeds:
        require_file(args.seeds, conf, "seed file")
    elif not data.storage.exists(join(data.api_table("submissions"), "_delta_log")):
        require_crawldb(data, "give --seeds FILE (or submit URLs to the API) for the first round")


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("crawl", build_parser(), run, argv, check)


if __name__ == "__main__":
    sys.exit(main())
