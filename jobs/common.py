"""What every job shares: its command line, its SparkSession, and DataFrame <-> Python rows.

Every job module has ``main(argv) -> int`` (argparse; builds the session; calls
``run(spark, conf, args)``) so that ``spark-submit jobs/<name>.py --help`` works. The
shared options are ``--data DIR``, ``--conf KEY=VALUE`` (repeatable), ``--conf-file FILE``
(repeatable) and ``--master URL``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from pathlib import Path

from crawldb.schema import Table
from jobs import write_behind
from jobs.layout import DataDir
from jobs.lock import DataDirLock, LockedError
from lib.config import Config, ConfigError, load_config

DELTA_EXTENSIONS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


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


READ_ONLY_JOBS = {"readdb", "readseg"}  # every other job writes, and holds DIR/_lock (jobs.lock)
EXIT_LOCKED = 3  # another live job holds the data directory
# The job raised: distinct from 1, which generate returns when nothing is due (as in
# Nutch, whose jobs return -1 on failure), so that a scheduler can tell them apart.
EXIT_FAILED = 255


def job_main(
    name: str,
    parser: argparse.ArgumentParser,
    run: Callable,
    argv: list[str] | None,
) -> int:
    """Parse arguments, load the configuration, build the session, run the job."""
    args = parser.parse_args(argv)
    try:
        conf = load_config(args.conf_file, args.conf)
    except ConfigError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    if name in READ_ONLY_JOBS:
        return _run(name, conf, args, run)
    try:
        with DataDirLock(DataDir.at(args.data, conf), name):
            return _run(name, conf, args, run)
    except LockedError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return EXIT_LOCKED


def _run(name: str, conf: Config, args, run: Callable) -> int:
    try:
        spark = build_spark(name, conf, args.master)
        result = run(spark, conf, args)
        write_behind.wait()
    except Exception:
        traceback.print_exc()
        _wait_for_side_writes()
        print(f"{name}: failed (exit code {EXIT_FAILED})", file=sys.stderr)
        return EXIT_FAILED
    return result if isinstance(result, int) else 0


def _wait_for_side_writes() -> None:
    """After a failure: let the side writes end before the lock is released."""
    try:
        write_behind.wait()
    except Exception:
        traceback.print_exc()


def build_spark(name: str, conf: Config, master: str | None = None):
    """The SparkSession with Delta Lake; reuses a running session when there is one."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(f"trawl-{name}")
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or "local[*]")
    for key, value in {**DELTA_EXTENSIONS, **conf.spark_settings()}.items():
        builder = builder.config(key, value)
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Not under spark-submit: fetch the Delta jars through Ivy, into a cache kept
        # between runs (spark-submit gets them from submit.sh's --packages instead).
        from delta import configure_spark_with_delta_pip

        builder = builder.config("spark.jars.ivy", str(cache_dir() / "ivy"))
        log_conf = Path(__file__).resolve().parent.parent / "conf" / "log4j2.properties"
        if log_conf.is_file():
            builder = builder.config(
                "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_conf}"
            )
        builder = configure_spark_with_delta_pip(builder)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    record_resolved_jars(spark)
    return spark


def record_resolved_jars(spark) -> None:
    """Write the jars Ivy resolved for the Delta package where submit.sh asked for them
    (``TRAWL_RECORD_JARS``), so that the next spark-submit passes them with ``--jars``
    instead of resolving the package again."""
    target = os.environ.get("TRAWL_RECORD_JARS")
    if not target:
        return
    ivy_jars = (cache_dir() / "ivy" / "jars").resolve()
    listed = spark.sparkContext.getConf().get("spark.jars", "").split(",")
    jars = [j for j in listed if Path(j.removeprefix("file://")).resolve().is_relative_to(ivy_jars)]
    if not jars:
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f"{path.name}.{os.getpid()}")
    temp.write_text(",".join(jars))
    temp.replace(path)  # atomic: a concurrent submit reads the old list or the new one


def cache_dir() -> Path:
    """Where downloaded jars are kept: ``$TRAWL_CACHE``, else ``~/.cache/trawl``."""
    return Path(os.environ.get("TRAWL_CACHE", Path.home() / ".cache" / "trawl"))


def python_df(spark, rows, table: Table):
    """A DataFrame of an RDD of dicts with ``table``'s columns, times still in epoch ms."""
    names = table.names
    tuples = rows.map(lambda row: tuple(row.get(name) for name in names))
    return spark.createDataFrame(tuples, table.python_ddl)


def with_timestamps(frame, table: Table):
    """The same DataFrame with ``table``'s epoch-ms columns as TIMESTAMP."""
    from pyspark.sql import functions as F

    for column in table.time_columns:
        frame = frame.withColumn(column, F.timestamp_millis(F.col(column)))
    return frame


def rows_to_df(spark, rows, table: Table):
    """A DataFrame of ``table`` as stored, from an RDD of dicts with times in epoch ms."""
    return with_timestamps(python_df(spark, rows, table), table)


def with_millis(frame, table: Table):
    """The same DataFrame with ``table``'s TIMESTAMP columns as epoch milliseconds."""
    from pyspark.sql import functions as F

    for column in table.time_columns:
        if column in frame.columns:
            frame = frame.withColumn(column, F.unix_millis(F.col(column)))
    return frame


def row_dict(row) -> dict | None:
    """A Spark Row (possibly NULL) of scalar, array and map columns as a plain dict.

    Not ``asDict(recursive=True)``: the rows given here hold no nested struct (maps come
    as dicts already), and its recursion into every value cost a merge ~12 us a row."""
    return None if row is None else row.asDict()


@contextmanager
def delta_commit_message(spark, message: str):
    """Label the Delta commits made inside the block (``userMetadata`` in the history),
    and the Spark jobs that make them (their description in the UI and event log)."""
    key = write_behind.COMMIT_LABEL
    spark.conf.set(key, message)
    spark.sparkContext.setJobDescription(message)
    try:
        yield
    finally:
        spark.conf.unset(key)
        spark.sparkContext.setJobDescription(None)


@contextmanager
def session_conf(spark, settings: dict[str, str]):
    """Spark SQL settings for the jobs run inside the block; the previous values after."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def upsert_by_host(spark, path: str, rows, table: Table, message: str, newer=None) -> None:
    """Merge per-host ``rows`` (cast to ``table``'s columns) into the Delta table at
    ``path``, one commit labelled ``message``: a host's row replaces the old one (when
    the SQL condition ``newer`` holds, if given), a new host's is inserted. The first
    rows make the table's first version (one write, not an empty table and a MERGE).

    Merged in the driver by delta-rs: the tables merged so (the robots.txt and soft-404
    caches) hold a row per host, which Spark's MERGE took a dozen jobs to commit."""
    from deltalake import DeltaTable, write_deltalake
    from deltalake.transaction import CommitProperties
    from pyspark.sql import functions as F

    answers = rows.select(*[F.col(name).cast(kind) for name, kind in table.columns]).toArrow()
    label = CommitProperties(custom_metadata={"userMetadata": message})
    if not DeltaTable.is_deltatable(path):
        write_deltalake(path, answers, mode="error", commit_properties=label)
        return
    merge = DeltaTable(path).merge(
        answers, "t.host = s.host", source_alias="s", target_alias="t", commit_properties=label
    )
    merge.when_matched_update_all(predicate=newer).when_not_matched_insert_all().execute()


class Stopwatch:
    """Elapsed seconds since creation."""

    def __init__(self):
        self.start = time.monotonic()

    @property
    def seconds(self) -> float:
        """Seconds elapsed."""
        return time.monotonic() - self.start


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return int(time.time() * 1000)


def progress(stage: str, fields: Iterable[tuple[str, object]]) -> None:
    """Print one progress line: ``stage: key value, key value``."""
    text = ", ".join(f"{value} {key}" for key, value in fields)
    print(f"{stage}: {text}", flush=True)
