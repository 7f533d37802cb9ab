"""Run one command and write its wall time, CPU time and peak memory as a JSON object.

Usage: python measure.py OUTPUT_JSON -- COMMAND ARGS... (the command's own output passes
through). Each measured command gets a parent of its own, so that its figures are its own.

CPU is counted for every process of the command's tree, not only those it waits for:
``RUSAGE_CHILDREN`` sees a process's CPU only once its parent has reaped it, and never
that of the PySpark workers (their daemon ignores SIGCHLD) or of a process its parent
left running. The tree is sampled every ``INTERVAL`` seconds from /proc (psutil), and
each process's own user and system time as last seen is summed over every process seen;
the figure is that sum or ``RUSAGE_CHILDREN``, whichever is larger (both are lower
bounds: the sum misses a process's last interval and a process that lived less than
one, the other every process not reaped through a chain of waits). Peak memory is the
largest sum of the tree's resident sets at one sample.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psutil

INTERVAL = 0.05


class TreeSampler:
    """CPU seconds and resident bytes of a process tree, sampled."""

    def __init__(self, root: int):
        self.root = root
        self.own: dict[tuple[int, float], float] = {}  # (pid, start time) -> CPU s
        self.kinds: dict[tuple[int, float], str] = {}  # -> what the process is
        self.peak_bytes = 0

    def sample(self) -> None:
        """Read every process of the tree once."""
        try:
            top = psutil.Process(self.root)
            processes = [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        resident = 0
        for process in processes:
            try:
                with process.oneshot():
                    key = (process.pid, process.create_time())
                    # Read again each time: submit.sh's shell becomes the JVM (exec);
                    # an ended process (no command line left) keeps the kind it had.
                    self.kinds[key] = kind_of(process) or self.kinds.get(key, "other")
                    times = process.cpu_times()
                    resident += process.memory_info().rss
            except psutil.Error:
                continue
            self.own[key] = times.user + times.system
        self.peak_bytes = max(self.peak_bytes, resident)

    def cpu_seconds(self) -> float:
        """The tree's CPU: every process's own, as last seen."""
        return sum(self.own.values())

    def cpu_by_kind(self) -> dict[str, float]:
        """The same, by what the processes are (``kind_of``)."""
        kinds: dict[str, float] = {}
        for key, seconds in self.own.items():
            kinds[self.kinds[key]] = kinds.get(self.kinds[key], 0.0) + seconds
        return {kind: round(seconds, 2) for kind, seconds in sorted(kinds.items())}


def kind_of(process) -> str | None:
    """A process's kind: the JVM, a PySpark worker (or its daemon), another Python
    process (a driver, a spider, a loop) or its program's name; None when its command
    line cannot be read (it has ended)."""
    line = " ".join(process.cmdline())
    if not line:
        return None
    if "pyspark.daemon" in line or "pyspark.worker" in line:
        return "pyspark workers"
    name = process.name()
    if name == "java":
        return "jvm"
    return "python" if name.startswith("python") else name


def main() -> int:
    """Run the command after ``--``; write its figures to the file given first."""
    import resource

    output, command = sys.argv[1], sys.argv[sys.argv.index("--") + 1 :]
    start = time.monotonic()
    child = subprocess.Popen(command)
    sampler = TreeSampler(child.pid)
    while child.poll() is None:
        sampler.sample()
        time.sleep(INTERVAL)
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    root_usage = usage.ru_utime + usage.ru_stime
    figures = {
        "exit": child.returncode,
        "seconds": wall,
        "cpu": max(sampler.cpu_seconds(), root_usage),
        "cpu_sampled": sampler.cpu_seconds(),
        "cpu_by_process": sampler.cpu_by_kind(),
        "cpu_waited": root_usage,
        "peak_bytes": max(sampler.peak_bytes, usage.ru_maxrss * 1024),
    }
    with open(output, "w", encoding="utf-8") as handle:
        json.dump(figures, handle)
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
