"""A crawl's health as figures a person and Prometheus read: the crawldb by status, the
last run of each job, the last fetch's hosts, the robots.txt answers, the data
directory's disk. Read with delta-rs from a local data directory, never with Spark.

``Health(root).figures()`` gives them, read again when one of the tables read gets a
new commit (its ``_delta_log`` folder changes) or ``SIZE_TTL`` seconds have passed (the
walk of the data directory), in a thread of their own: a scrape costs milliseconds,
and gives figures at most one read behind the tables. ``families``
turns the figures into Prometheus metric families (``trawl_*``, units in the names),
which the API serves at ``/metrics`` and ``write_textfile`` writes for node_exporter.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from dataclasses import dataclass, field, replace

from engine.runtime.layout import DataDir
from engine.tables.metrics import metrics_path
from lib.clock import now_ms
from lib.progress import read_progress

SIZE_TTL = 60.0  # seconds a walk of the data directory's files stays current
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx", "none")  # robots.txt answers


@dataclass
class Figures:
    """What ``Health.figures`` gives."""

    statuses: dict[str, int] = field(default_factory=dict)  # crawldb URLs by status
    jobs: dict[str, dict] = field(default_factory=dict)  # job -> its last metrics row
    hosts: list[dict] = field(default_factory=list)  # the last fetch's per-host rows
    rounds: list[dict] = field(default_factory=list)  # the last fetches, oldest first
    robots: dict[str, int] = field(default_factory=dict)  # robots.txt answers by class
    disk: dict[str, int] = field(default_factory=dict)  # data, free and size bytes
    held: dict[str, int] = field(default_factory=dict)  # hostdb: hosts held back, circuit open
    running: dict | None = None  # the fetch under way: segment, done, listed, eta_seconds


class Health:
    """The figures of one data directory (see the module's docstring). A call never
    waits on a read of the tables once there are figures: when a table has a new commit
    (or the disk's figures are ``SIZE_TTL`` old) it gets the figures it has, and a
    thread reads the new ones for the next call. Only the first call reads in its own
    time, as ``warm()`` does ahead of it."""

    def __init__(self, root: str, rounds_kept: int = 20):
        self.data = DataDir.at(root)
        self.rounds_kept = rounds_kept
        self._lock = threading.Lock()
        self._current: tuple | None = None  # (stamps, Figures)
        self._reading: threading.Thread | None = None

    def warm(self) -> None:
        """Read the figures in a thread of their own, so that the first call finds them."""
        with self._lock:
            self._refresh(self._stamps())

    def figures(self) -> Figures:
        """The figures; the fetch under way always as it is now."""
        stamps = self._stamps()
        with self._lock:
            current = self._current
            if current is None:
                reading = self._reading
            elif current[0] != stamps:
                self._refresh(stamps)
        if current is None:
            if reading is not None:
                reading.join()
            if self._current is None:  # no read yet, or the first one failed: read here
                self._read(stamps)
            current = self._current
        return replace(current[1], running=running_fetch(self.data))

    @property
    def metrics(self) -> str:
        """The metrics table's path."""
        return metrics_path(self.data.root)

    def _stamps(self) -> tuple:
        tables = (self.data.crawldb, self.metrics, self.data.robots, self.data.hostdb)
        return (*(log_stamp(table) for table in tables), int(time.monotonic() // SIZE_TTL))

    def _refresh(self, stamps: tuple) -> None:
        """Start a read of the figures unless one is under way (the lock held)."""
        if self._reading is None or not self._reading.is_alive():
            self._reading = threading.Thread(target=self._read, args=(stamps,), daemon=True)
            self._reading.start()

    def _read(self, stamps: tuple) -> None:
        runs = job_runs(self.metrics) if stamps[1] is not None else []
        figures = Figures(
            statuses=crawldb_statuses(self.data.crawldb) if stamps[0] is not None else {},
            jobs=last_jobs(runs),
            hosts=last_hosts(self.metrics) if stamps[1] is not None else [],
            rounds=last_rounds(runs, self.rounds_kept),
            robots=robots_classes(self.data.robots) if stamps[2] is not None else {},
            disk=disk_figures(self.data.root),
            held=held_hosts(self.data.hostdb) if stamps[3] is not None else {},
        )
        with self._lock:
            self._current = (stamps, figures)


def log_stamp(table: str):
    """A key that changes with every commit to a local Delta table: its log folder's
    modification time and entry count; None when there is no table."""
    log = os.path.join(table, "_delta_log")
    try:
        stat = os.stat(log)
    except FileNotFoundError:
        return None
    return stat.st_mtime_ns, stat.st_nlink, len(os.listdir(log))


def _dataset(path: str):
    from deltalake import DeltaTable

    return DeltaTable(path).to_pyarrow_dataset()


def crawldb_statuses(path: str) -> dict[str, int]:
    """URLs by status: the status column alone, counted in Arrow."""
    counts = _dataset(path).to_table(columns=["status"]).column("status").value_counts()
    return {str(item["values"]): int(item["counts"]) for item in counts.to_pylist()}


def job_runs(path: str) -> list[dict]:
    """Every job run of the metrics table, oldest first, without the per-host column
    (a fetch's may hold thousands of hosts): job, segment, finished (epoch s), seconds,
    figures (a dict)."""
    columns = ["job", "segment", "finished", "seconds", "figures"]
    runs = _dataset(path).to_table(columns=columns).to_pylist()
    for run in runs:
        run["finished"] = run["finished"].timestamp()
        run["figures"] = dict(run["figures"] or [])
    return sorted(runs, key=lambda run: run["finished"])


def last_jobs(runs: list[dict]) -> dict[str, dict]:
    """Job -> its last run."""
    return {run["job"]: run for run in runs}


def last_hosts(path: str) -> list[dict]:
    """The last fetch's per-host rows (urls, pages, errors, bytes, response times): the
    one file of the last fetch's row read, found by its time."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    dataset = _dataset(path)
    fetches = ds.field("job") == "fetch"
    times = dataset.to_table(columns=["finished"], filter=fetches).column("finished")
    if len(times) == 0:
        return []
    last = pc.max(times)
    rows = dataset.to_table(columns=["hosts"], filter=fetches & (ds.field("finished") == last))
    return list(rows.column("hosts")[0].as_py() or [])


def last_rounds(runs: list[dict], kept: int) -> list[dict]:
    """The last ``kept`` fetches, oldest first: segment, finished, seconds, pages,
    errors, pages per second, deferred."""
    fetches = [run for run in runs if run["job"] == "fetch"][-kept:]
    return [
        {
            "segment": run["segment"],
            "finished": run["finished"],
            "seconds": run["seconds"],
            **{
                key: run["figures"].get(key, 0.0)
                for key in ("pages", "errors", "pages_per_second", "deferred")
            },
        }
        for run in fetches
    ]


def held_hosts(path: str) -> dict[str, int]:
    """The hostdb's hosts that the last round to ask them held back (pages left to
    retry or skipped), and those whose circuit breaker opened in it."""
    import pyarrow.compute as pc

    table = _dataset(path).to_table(columns=["held_back", "circuit_open"])
    held = pc.sum(pc.greater(table["held_back"], 0)).as_py() or 0
    return {"held_back": held, "circuit_open": pc.sum(table["circuit_open"]).as_py() or 0}


def robots_classes(path: str) -> dict[str, int]:
    """The cached robots.txt answers by class of HTTP status (none: no answer)."""
    statuses = _dataset(path).to_table(columns=["http_status"]).column("http_status")
    classes = dict.fromkeys(STATUS_CLASSES, 0)
    for status in statuses.to_pylist():
        name = "none" if status is None else f"{status // 100}xx"
        classes[name if name in classes else "none"] += 1
    return classes


def disk_figures(root: str) -> dict[str, int]:
    """Bytes of the data directory's files, and the free and total bytes of its disk
    (of the nearest folder that exists, before the first job makes the directory)."""
    used = 0
    for folder, _, files in os.walk(root):
        for name in files:
            try:
                used += os.lstat(os.path.join(folder, name)).st_size
            except FileNotFoundError:  # removed while walking (a VACUUM, a temp file)
                continue
    existing = os.path.abspath(root)
    while not os.path.isdir(existing):
        existing = os.path.dirname(existing)
    usage = shutil.disk_usage(existing)
    return {"data": used, "free": usage.free, "size": usage.total}


def running_fetch(data: DataDir) -> dict | None:
    """The fetch under way (a segment generated, not fetched, whose tasks write
    progress): its URLs done and listed, and the seconds its tasks project to the end."""
    for name in reversed(data.pending("fetched")):
        segment = data.segment(name)
        if not segment.storage.is_dir(segment.progress_dir):
            continue
        totals = read_progress(segment.storage, segment.progress_dir)
        listed = int(segment.summary("generated")["urls"]) + totals.added
        eta = None if totals.eta_at is None else max(totals.eta_at - now_ms() / 1000, 0.0)
        return {"segment": name, "done": totals.done, "listed": listed, "eta_seconds": eta}
    return None
