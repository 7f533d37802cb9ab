"""Side-table writes made in the background while the job goes on (write-behind).

The metrics table and the robots.txt and soft-404 caches are not read by the stage that
writes them: the metrics by other jobs and notebooks, the caches by the next round. Each
of their Delta commits costs one to four seconds, mostly waiting on a dozen small Spark
jobs and the log write, which the job's main line need not sit through: a crawl round
of 2,000 hosts spends some 8 s on them. One thread makes them, in the order given, in a
SparkSession of its own (sharing the SparkContext and its executors) so that the commit
label it sets never labels a commit of the main line.

Readers of these tables call ``wait()`` first; every job calls it before it releases
the data directory's lock, and fails if a write failed. A job killed before a side write
ends loses a cache entry (fetched again next round) or a metrics row, never crawldb
state: the crawldb, the segments and their stage markers are written on the main line.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

COMMIT_LABEL = (
    "spark.databricks.delta.commitInfo.userMetadata"  # engine.tables.delta_commits sets it
)
_lock = threading.Lock()
_pending: list[tuple[str, Future]] = []  # (table, write), in the order given
_state: dict = {}  # "executor", "session", "parent": made on first use


def later(spark, table: str, write: Callable[..., None], *args) -> None:
    """Run ``write(session, *args)``, a write to the side table named ``table``, in the
    background thread after the writes given before it. ``session`` shares ``spark``'s
    SparkContext and settings; ``write`` must build its DataFrames from it (from table
    paths), not take the caller's."""
    with _lock:
        executor, session = _worker(spark)
        _pending.append((table, executor.submit(write, session, *args)))


def wait(table: str | None = None) -> None:
    """Block until the writes to ``table`` given so far are done (every write when
    None); then raise the first failure among them, if one failed."""
    with _lock:
        waited = [(name, f) for name, f in _pending if table is None or name == table]
    failure = None
    for _, future in waited:
        error = future.exception()  # blocks until it ends
        failure = failure or error
    with _lock:
        _pending[:] = [entry for entry in _pending if entry not in waited]
    if failure is not None:
        raise failure


def _worker(spark):
    if _state.get("parent") is not spark:
        _state["session"] = _side_session(spark)
        _state["parent"] = spark
    if "executor" not in _state:
        _state["executor"] = ThreadPoolExecutor(1, thread_name_prefix="trawl-write-behind")
    return _state["executor"], _state["session"]


def _side_session(spark):
    """A session with ``spark``'s runtime settings but its own: a label set for one
    commit stays there."""
    session = spark.newSession()
    for key, value in spark.conf.getAll.items():
        if key != COMMIT_LABEL and spark.conf.isModifiable(key):
            session.conf.set(key, value)
    return session
