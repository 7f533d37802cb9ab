"""A job's command line and its run: options shared by every job, the data directory's
lock, exit codes.

Every job module has ``main(argv) -> int`` (argparse; builds the session; calls
``run(spark, conf, args)``) so that ``spark-submit jobs/<name>.py --help`` works. The
shared options are ``--data DIR``, ``--conf KEY=VALUE`` (repeatable), ``--conf-file FILE``
(repeatable) and ``--master URL``.
"""

from __future__ import annotations

import argparse
import errno
import logging
import signal
import sys
import threading
import traceback
from collections.abc import Callable

from engine.runtime import write_behind
from engine.runtime.layout import DataDir
from engine.runtime.lock import DataDirLock, LockedError
from engine.runtime.session import build_spark
from lib import plugins
from lib.config import Config, ConfigError, load_config
from lib.errors import UsageError


def job_parser(name: str, description: str | None) -> argparse.ArgumentParser:
    """An argument parser with the options shared by all jobs."""
    parser = argparse.ArgumentParser(prog=f"submit.sh {name}", description=description)
    parser.add_argument("--data", required=True, help="data directory (crawldb, segments)")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one configuration key (repeatable)",
    )
    parser.add_argument(
        "--conf-file",
        action="append",
        default=[],
        metavar="FILE",
        help="site configuration file, TOML, same keys as conf/trawl-default.toml",
    )
    parser.add_argument(
        "--master", default=None, help="Spark master URL (default: local[*], or spark-submit's)"
    )
    return parser


READ_ONLY_JOBS = {
    "readdb",
    "readseg",
}  # every other job writes, and holds DIR/_lock (engine.runtime.lock)

EXIT_LOCKED = 3  # another live job holds the data directory

EXIT_USAGE = 2  # a mistake in what the user gave (lib.errors.UsageError), told in one line
# The job raised: distinct from 1, which generate returns when nothing is due (as in
# Nutch, whose jobs return -1 on failure), so that a scheduler can tell them apart.
EXIT_FAILED = 255
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT), as a shell reports a command it interrupted


def job_main(
    name: str,
    parser: argparse.ArgumentParser,
    run: Callable,
    argv: list[str] | None,
    check: Callable | None = None,
) -> int:
    """Parse arguments, load the configuration, build the session, run the job.

    ``check(conf, args)``, when given, looks at the job's inputs before the session is
    built (a missing seed file, a data directory without a crawldb) and raises
    ``UsageError``: the job then exits 2 with one line, without starting Spark."""
    args = parser.parse_args(argv)
    try:
        conf = load_config(args.conf_file, args.conf)
        plugins.check(conf)
        if check is not None:
            check(conf, args)
    except (ConfigError, UsageError) as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if name in READ_ONLY_JOBS:
        return _run(name, conf, args, run)
    try:
        with DataDirLock(DataDir.at(args.data, conf), name):
            return _run(name, conf, args, run)
    except LockedError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except OSError as exc:  # the lock itself could not be written (or removed)
        if not disk_full(exc):
            raise
        print(disk_full_message(name, args.data, exc), file=sys.stderr)
        return EXIT_FAILED


def _run(name: str, conf: Config, args, run: Callable) -> int:
    try:
        spark = build_spark(name, conf, args.master)
        _on_interrupt()
        result = run(spark, conf, args)
        write_behind.wait()
    except UsageError as exc:
        _wait_for_side_writes()
        print(f"{name}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return _stopped_by_interrupt(name)
    except Exception as exc:
        if _interrupted.is_set():  # the JVM's shutdown, seen by the driver's calls
            return _stopped_by_interrupt(name)
        traceback.print_exc()
        _wait_for_side_writes()
        if disk_full(exc):
            print(disk_full_message(name, args.data, exc), file=sys.stderr)
        print(f"{name}: failed (exit code {EXIT_FAILED})", file=sys.stderr)
        return EXIT_FAILED
    return result if isinstance(result, int) else 0


INTERRUPTED = "interrupted; the stages already done are kept: run the same command again to go on"
_interrupted = threading.Event()


def _on_interrupt() -> None:
    """Ctrl-C ends the job with one line and ``EXIT_INTERRUPTED``. It reaches the whole
    foreground group, Spark's JVM too, whose shutdown then fails the driver's calls into
    it: those failures (and py4j's logged tracebacks) are the interruption's, not news.
    Replaces PySpark's handler, which asks the JVM to cancel its jobs as it goes down."""

    def interrupted(_signal, _frame):
        _interrupted.set()
        logging.disable(logging.CRITICAL)
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, interrupted)


def _stopped_by_interrupt(name: str) -> int:
    print(f"{name}: {INTERRUPTED}", file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


NO_SPACE = "No space left on device"  # ENOSPC's text, in Python's and the JVM's errors


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it was raised from, is a full disk (a Python
    ENOSPC, or a JVM or task error whose text says it)."""
    return any(
        (isinstance(e, OSError) and e.errno == errno.ENOSPC) or NO_SPACE in str(e)
        for e in _chain(exc)
    )


def disk_full_message(name: str, data: str, exc: BaseException) -> str:
    """The one line a full disk gets: the data directory, the file when known."""
    path = next((e.filename for e in _chain(exc) if getattr(e, "filename", None)), None)
    where = f" (writing {path})" if path else ""
    return (
        f"{name}: no space left on the device of {data}{where}: the failed step's commit "
        "was not made; free space and run the job again"
    )


def _chain(exc: BaseException):
    seen: BaseException | None = exc
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__


def _wait_for_side_writes() -> None:
    """After a failure: let the side writes end before the lock is released."""
    try:
        write_behind.wait()
    except Exception:
        traceback.print_exc()
