"""Progress of a long stage while it runs: ``done / total``, rate and ETA, as one line.

Executors report with ``ProgressFile`` (a small JSON file per task, rewritten at most
four times per ``interval`` seconds through the data directory's storage, so that it
works the same on a local disk, a shared file system or HDFS); the driver sums them and
prints ``progress_line`` every ``interval`` seconds (``engine.runtime.progress``), at most a
quarter interval behind the tasks.
"""

from __future__ import annotations

import json
import time
from typing import NamedTuple

from lib.storage import Storage

HOLDING_SHOWN = 5  # names of what holds a stage, at most, in its line


def progress_line(
    stage: str,
    done: int,
    total: int,
    elapsed_s: float,
    unit: str,
    eta_s: float | None = None,
    note: str = "",
) -> str:
    """``fetch: 1,234/9,000 URLs (13.7%), 56.2 URLs/s, ETA 2m18s, 22s elapsed``; the ETA
    is ``eta_s`` when the stage knows better (fetch: its hosts' queues and pauses), else
    what the rate so far leaves; ``note`` follows (``12 deferred; held by ...``)."""
    share = f" ({done / total:.1%})" if total else ""
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    if eta_s is not None:
        eta = _duration(eta_s)
    else:
        eta = _duration((total - done) / rate) if rate > 0 and total >= done else "unknown"
    return (
        f"{stage}: {done:,}/{total:,} {unit}{share}, {rate:.1f} {unit}/s, ETA {eta}, "
        f"{_duration(elapsed_s)} elapsed{f', {note}' if note else ''}"
    )


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class ProgressFile:
    """A task's progress, written to ``path`` when it changed and a quarter of the
    driver's ``interval`` passed since the last write (and once more by ``finish``).
    Rewriting only once per ``interval`` left the driver's line up to a whole interval
    behind: its first line read 2 of 8,000 URLs done and an ETA of 11 hours."""

    def __init__(self, storage: Storage, path: str, total: int, interval: float):
        self.storage = storage
        self.path = path
        self.total = total
        self.interval = interval
        self._period = interval / 4
        self.done = 0
        self.added = 0  # units found while working (links followed in the round)
        self.deferred = 0  # units sent to a later round (lib.fetching.roundtail)
        self.eta_at: float | None = None  # epoch seconds when the task expects to end
        self.holding: list[str] = []  # what holds the task, when a few things do
        self._written_at = float("-inf")  # the first advance writes

    def advance(self, count: int = 1) -> None:
        """Count ``count`` more units done."""
        self.done += count
        if self.interval > 0 and time.monotonic() - self._written_at >= self._period:
            self._write()

    def finish(self) -> None:
        """Write the final count."""
        if self.interval > 0:
            self._write()

    def _write(self) -> None:
        self._written_at = time.monotonic()
        figures = {
            "done": self.done,
            "total": self.total + self.added,
            "added": self.added,
            "deferred": self.deferred,
            "eta_at": self.eta_at,
            "holding": self.holding,
        }
        record = json.dumps(figures).encode()
        try:
            self.storage.write_atomic(self.path, record)
        except Exception:  # noqa: BLE001 - OSError, HdfsError ...
            pass  # progress is informative only: never fail a task for it


class Totals(NamedTuple):
    """The tasks' progress files summed: units done, found while working, deferred; the
    latest end any task expects (epoch seconds, ``None``: none said) and what holds them."""

    done: int = 0
    added: int = 0
    deferred: int = 0
    eta_at: float | None = None
    holding: tuple[str, ...] = ()

    def note(self) -> str:
        """``12 deferred; held by a, b`` (empty when there is nothing to say)."""
        parts = [f"{self.deferred:,} deferred"] if self.deferred else []
        if self.holding:
            parts.append("held by " + ", ".join(self.holding))
        return "; ".join(parts)


def read_progress(storage: Storage, folder: str) -> Totals:
    """The progress files in ``folder``, summed (``Totals``)."""
    done = added = deferred = 0
    eta_at: float | None = None
    holding: list[str] = []
    for name in storage.list_files(folder):
        if name.startswith("."):
            continue  # a file being replaced
        try:
            figures = json.loads(storage.read_bytes(f"{folder}/{name}"))
        except Exception:  # noqa: BLE001 - replaced between listing and reading
            continue
        done += int(figures["done"])
        added += int(figures.get("added", 0))
        deferred += int(figures.get("deferred", 0))
        if figures.get("eta_at") is not None:
            eta_at = max(eta_at or 0.0, float(figures["eta_at"]))
        holding += figures.get("holding", [])
    return Totals(done, added, deferred, eta_at, tuple(holding[:HOLDING_SHOWN]))
