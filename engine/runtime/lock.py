"""One writer per data directory: ``DIR/_lock`` (JSON: pid, host, job, start time).

Delta Lake makes each commit atomic, but two crawls interleaving their rounds on one
crawldb would generate the same URLs twice and race on segments. So every job that
writes takes the lock first and fails fast, naming the holder, when another live job
holds it. A lock left by a process that died (same host, PID gone) is taken over, so
that a killed crawl can simply be run again. Taking the lock is an exclusive file
creation: O_EXCL on a local or NFS file system, a create without overwrite at the
HDFS NameNode.
"""

from __future__ import annotations

import json
import os
import socket
import time

from engine.runtime.layout import DataDir


class LockedError(RuntimeError):
    """Another live job holds the data directory."""


class DataDirLock:
    """``with DataDirLock(root, "crawl"):`` runs the block as the directory's only writer."""

    def __init__(self, data: DataDir, job: str):
        self.storage = data.storage
        self.root = data.root
        self.path = data.lock
        self.job = job
        self.taken_over: dict | None = None

    def __enter__(self) -> DataDirLock:
        self.storage.makedirs(self.root)
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "job": self.job,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        while not self._create(record):
            holder = self._holder()
            if holder is None:
                time.sleep(0.2)  # a holder between creating and writing the file
                holder = self._holder()
            if holder is not None and _alive(holder):
                raise LockedError(
                    f"{self.root} is in use by another Trawl job: {holder.get('job')} "
                    f"(pid {holder.get('pid')} on {holder.get('host')}, started "
                    f"{holder.get('started')}). Wait for it to finish; if it is dead on another "
                    f"machine, remove {self.path}."
                )
            self.taken_over = holder
            self._remove_stale(holder)
        return self

    def __exit__(self, *exc_info) -> None:
        self.storage.delete(self.path)

    def _create(self, record: dict) -> bool:
        return self.storage.create_new(self.path, json.dumps(record).encode("utf-8"))

    def _holder(self) -> dict | None:
        try:
            return json.loads(self.storage.read_bytes(self.path))
        except (FileNotFoundError, ValueError):
            return None  # vanished, or half written by a holder that died at once

    def _remove_stale(self, holder: dict | None) -> None:
        self.storage.delete(self.path)  # if another process took it over first: try again


def _alive(holder: dict) -> bool:
    """Whether the lock's holder may still run: on another host we cannot tell, so yes."""
    if holder.get("host") != socket.gethostname():
        return True
    try:
        pid = int(holder["pid"])
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, KeyError, ValueError, TypeError):
        return True
    return not _exited(pid)


def _exited(pid: int) -> bool:
    """Whether the process has ended and waits only to be reaped (a zombie): a driver
    killed with its process group stays one until its parent, or init, reaps it, and
    a crawl rerun at once must not take it for a live writer. Linux only (``/proc``);
    elsewhere False."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[:1]  # the name in parentheses may hold spaces
    return state in (["Z"], ["X"])
