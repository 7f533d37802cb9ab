"""Progress lines of long stages on the driver, every ``job.progress.interval`` seconds.

``StageProgress`` runs a daemon thread while its block runs and prints
``lib.progress.progress_line`` from a ``read() -> (done, total[, eta_s, note])``
callback: for fetch, the URLs done summed over the tasks' progress files, with the ETA
the tasks project from their hosts' queues; for other stages, the tasks done in Spark's
active stages (``spark_tasks``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from lib.progress import progress_line

PROGRESS_KEY = "job.progress.interval"


class StageProgress:
    """``with StageProgress("fetch", "URLs", read, interval):`` prints progress lines."""

    def __init__(self, stage: str, unit: str, read: Callable[[], tuple[int, int]], interval: float):
        self.stage = stage
        self.unit = unit
        self.read = read
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"progress-{stage}", daemon=True)
        self._started = time.monotonic()

    def __enter__(self) -> StageProgress:
        if self.interval > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.interval + 5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                done, total, *known = self.read()
            except Exception:  # noqa: BLE001 - progress must never break the job
                continue
            elapsed = time.monotonic() - self._started
            line = progress_line(self.stage, done, total, elapsed, self.unit, *known)
            print(line, flush=True)


def spark_tasks(spark) -> Callable[[], tuple[int, int]]:
    """Tasks done / tasks in the stages running now."""
    tracker = spark.sparkContext.statusTracker()

    def read() -> tuple[int, int]:
        done = total = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return done, total

    return read


def progress(stage: str, fields: Iterable[tuple[str, object]]) -> None:
    """Print one progress line: ``stage: key value, key value``."""
    text = ", ".join(f"{value} {key}" for key, value in fields)
    print(f"{stage}: {text}", flush=True)
