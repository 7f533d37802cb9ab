"""Progress of a long stage while it runs: ``done / total``, rate and ETA, as one line.

Executors report with ``ProgressFile`` (a small JSON file per task, rewritten at most
four times per ``interval`` seconds through the data directory's storage, so that it
works the same on a local disk, a shared file system or HDFS); the driver sums them and
prints ``progress_line`` every ``interval`` seconds (``jobs.progress``), at most a
quarter interval behind the tasks.
"""

from __future__ import annotations

import json
import time

from lib.storage import Storage


def progress_line(stage: str, done: int, total: int, elapsed_s: float, unit: str) -> str:
    """``fetch: 1,234/9,000 URLs (13.7%), 56.2 URLs/s, ETA 2m18s, 22s elapsed``."""
    share = f" ({done / total:.1%})" if total else ""
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    eta = _duration((total - done) / rate) if rate > 0 and total >= done else "unknown"
    return (
        f"{stage}: {done:,}/{total:,} {unit}{share}, {rate:.1f} {unit}/s, ETA {eta}, "
        f"{_duration(elapsed_s)} elapsed"
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
        figures = {"done": self.done, "total": self.total + self.added, "added": self.added}
        record = json.dumps(figures).encode()
        try:
            self.storage.write_atomic(self.path, record)
        except Exception:  # noqa: BLE001 - OSError, HdfsError ...
            pass  # progress is informative only: never fail a task for it


def read_progress(storage: Storage, folder: str) -> tuple[int, int]:
    """``(units done, units added while working)``, summed over the progress files in
    ``folder``."""
    done = added = 0
    for name in storage.list_files(folder):
        if name.startswith("."):
            continue  # a file being replaced
        try:
            figures = json.loads(storage.read_bytes(f"{folder}/{name}"))
        except Exception:  # noqa: BLE001 - replaced between listing and reading
            continue
        done += int(figures["done"])
        added += int(figures.get("added", 0))
    return done, added
