"""inject: merge the URLs of a seed file into the crawldb as unfetched (data flow step 1).

Usage: ``submit.sh inject --seeds FILE --data DIR``. Malformed lines are reported with
their line number and skipped; a URL already in the crawldb keeps its history. A seed file
without one usable line is a mistake in what was given: exit 2, naming the file.
"""

from __future__ import annotations

import sys

from crawldb.injection import is_error, is_seed
from engine.executors import seeds
from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import DataDir, require_file
from engine.runtime.progress import progress
from engine.tables.metrics import record
from lib.clock import Stopwatch
from lib.errors import UsageError

ERRORS_SHOWN = 20


def build_parser():
    """Command line of the job."""
    parser = job_parser("inject", __doc__.splitlines()[0])
    parser.add_argument("--seeds", required=True, help="seed file (local or Hadoop path)")
    return parser


def run(spark, conf, args) -> int:
    """Inject the seed file; returns 0 (``UsageError`` when no line could be used)."""
    data = DataDir.at(args.data, conf)
    return inject(spark, conf, data, args.seeds)


def inject(spark, conf, data: DataDir, seeds_path: str) -> int:
    """Parse, normalize and merge seeds into the crawldb of ``data``: in the driver for a
    small seed file and crawldb, else by Spark (``engine.executors.seeds``)."""
    clock = Stopwatch()
    settings = conf.as_dict()
    if seeds.in_driver(settings, data, seeds_path):
        accepted, errors = seeds.inject_in_driver(spark, settings, data, seeds_path, "trawl inject")
        error_count, shown = len(errors), errors[:ERRORS_SHOWN]
    else:
        accepted, error_count, shown = inject_by_spark(spark, conf, data, seeds_path)
    for error in shown:
        print(f"inject: {seeds_path}: {error}; line skipped", file=sys.stderr)
    if error_count > ERRORS_SHOWN:
        print(f"inject: ... {error_count - ERRORS_SHOWN} more malformed lines", file=sys.stderr)
    progress("inject", [("urls", accepted), ("malformed lines", error_count)])
    summary = {"urls": accepted, "malformed_lines": error_count, "seconds": clock.seconds}
    record(spark, data.root, "inject", None, summary)
    if not accepted:
        raise UsageError(
            f"{seeds_path} holds no usable seed line ({error_count} malformed): nothing injected"
        )
    return 0


def inject_by_spark(spark, conf, data: DataDir, seeds_path: str):
    """``inject`` by Spark's jobs: ``(URLs accepted, malformed lines, the first shown)``."""
    parsed = seeds.parse_by_spark(spark, conf.as_dict(), seeds_path).cache()
    errors = parsed.filter(is_error)
    error_count = errors.count()
    shown = errors.take(ERRORS_SHOWN)
    accepted = seeds.merge_seeds(spark, conf, data, parsed.filter(is_seed), "trawl inject")
    parsed.unpersist()
    return accepted, error_count, shown


def check(conf, args) -> None:
    """Before Spark starts: the seed file exists."""
    require_file(args.seeds, conf, "seed file")


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("inject", build_parser(), run, argv, check)


if __name__ == "__main__":
    sys.exit(main())
