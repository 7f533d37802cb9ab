"""One writer per data directory (engine/runtime/lock.py), with real processes."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.runtime.layout import LOCK_NAME, DataDir
from engine.runtime.lock import DataDirLock, LockedError

ROOT = Path(__file__).resolve().parent.parent


def test_a_second_writer_fails_fast_naming_the_holder(tmp_path):
    with DataDirLock(DataDir.at(tmp_path), "crawl"):
        holder = json.loads((tmp_path / LOCK_NAME).read_text())
        with pytest.raises(LockedError, match=rf"crawl \(pid {holder['pid']} on") as failure:
            with DataDirLock(DataDir.at(tmp_path), "inject"):
                pass
        assert str(tmp_path / LOCK_NAME) in str(failure.value)
    assert not (tmp_path / LOCK_NAME).exists()  # released


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    held = DataDirLock(DataDir.at(tmp_path), "crawl")
    held.__enter__()  # written by us, then made to look like the dead process's
    record = json.loads(Path(held.path).read_text())
    Path(held.path).write_text(json.dumps({**record, "pid": int(dead.stdout)}))
    with DataDirLock(DataDir.at(tmp_path), "crawl") as again:
        assert again.taken_over["pid"] == int(dead.stdout)


def start_holder(folder: Path) -> subprocess.Popen:
    """Another process that holds the lock of ``folder`` for 30 s (once it says so)."""
    code = (
        "import sys, time; from engine.runtime.layout import DataDir\n"
        "from engine.runtime.lock import DataDirLock\n"
        "with DataDirLock(DataDir.at(sys.argv[1]), 'crawl'):\n"
        "    print('held', flush=True); time.sleep(30)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True, env=env
    )


def test_a_live_holder_in_another_process_blocks(tmp_path):
    holder = start_holder(tmp_path)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LockedError):
            DataDirLock(DataDir.at(tmp_path), "generate").__enter__()
    finally:
        holder.kill()
        holder.wait()
    with DataDirLock(DataDir.at(tmp_path), "generate"):  # killed: its lock is stale now
        pass


def test_a_lock_held_by_a_killed_process_not_yet_reaped_is_taken_over(tmp_path):
    """A driver killed with its process group is a zombie until reaped; rerunning the
    crawl at once must not wait for it (tests/test_failures.py reruns right away)."""
    holder = start_holder(tmp_path)
    try:
        assert holder.stdout.readline().strip() == "held"
        holder.kill()
        deadline = time.monotonic() + 10
        while Path(f"/proc/{holder.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the killed holder never became a zombie"
            time.sleep(0.01)
        with DataDirLock(DataDir.at(tmp_path), "crawl") as again:  # not reaped yet
            assert again.taken_over["pid"] == holder.pid
    finally:
        holder.kill()
        holder.wait()
