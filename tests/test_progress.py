"""Progress lines and the task progress files they are summed from (no Spark)."""

from lib.progress import ProgressFile, progress_line, read_progress
from lib.storage import LocalStorage


def test_progress_line_has_share_rate_and_eta():
    line = progress_line("fetch", 1234, 9000, 22.0, "URLs")
    assert line == "fetch: 1,234/9,000 URLs (13.7%), 56.1 URLs/s, ETA 2m18s, 22s elapsed"


def test_progress_line_before_anything_is_done():
    line = progress_line("parse", 0, 8, 3.0, "tasks")
    assert line == "parse: 0/8 tasks (0.0%), 0.0 tasks/s, ETA unknown, 3s elapsed"


def test_progress_files_are_summed_over_tasks(tmp_path):
    storage = LocalStorage()
    folder = str(tmp_path / "_progress")
    first = ProgressFile(storage, f"{folder}/part-00000.json", 10, interval=0.0001)
    second = ProgressFile(storage, f"{folder}/part-00001.json", 5, interval=3600)
    for _ in range(7):
        first.advance()
    second.advance(3)
    assert read_progress(storage, folder)[:2] == (7 + 3, 0)  # both wrote once at least
    second.advance(2)
    assert read_progress(storage, folder)[:2] == (10, 0)  # not yet rewritten: interval not over
    second.finish()
    assert read_progress(storage, folder)[:2] == (12, 0)
    first.added = 4  # links followed: more to do than the task started with
    first.advance()
    assert read_progress(storage, folder)[:2] == (13, 4)


def test_no_progress_files_no_progress(tmp_path):
    assert read_progress(LocalStorage(), str(tmp_path / "none"))[:2] == (0, 0)
    off = ProgressFile(LocalStorage(), str(tmp_path / "p" / "x.json"), 3, interval=0)
    off.advance()
    off.finish()
    assert not (tmp_path / "p").exists()


def test_deferred_urls_the_tasks_eta_and_the_holding_hosts_are_summed(tmp_path):
    storage = LocalStorage()
    folder = str(tmp_path / "_progress")
    first = ProgressFile(storage, f"{folder}/part-00000.json", 10, interval=0.0001)
    second = ProgressFile(storage, f"{folder}/part-00001.json", 5, interval=0.0001)
    first.deferred, first.eta_at, first.holding = 4, 1000.0, ["slow.example"]
    second.deferred, second.eta_at = 2, 1200.0
    first.advance()
    second.advance()
    totals = read_progress(storage, folder)
    assert (totals.deferred, totals.eta_at, totals.holding) == (6, 1200.0, ("slow.example",))
    assert totals.note() == "6 deferred; held by slow.example"
    line = progress_line("fetch", 2, 15, 30.0, "URLs", eta_s=95.0, note=totals.note())
    assert line.endswith("ETA 1m35s, 30s elapsed, 6 deferred; held by slow.example")
