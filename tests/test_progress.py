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
    assert read_progress(storage, folder) == (7 + 3, 0)  # both wrote once at least
    second.advance(2)
    assert read_progress(storage, folder) == (10, 0)  # not yet rewritten: interval not over
    second.finish()
    assert read_progress(storage, folder) == (12, 0)
    first.added = 4  # links followed: more to do than the task started with
    first.advance()
    assert read_progress(storage, folder) == (13, 4)


def test_no_progress_files_no_progress(tmp_path):
    assert read_progress(LocalStorage(), str(tmp_path / "none")) == (0, 0)
    off = ProgressFile(LocalStorage(), str(tmp_path / "p" / "x.json"), 3, interval=0)
    off.advance()
    off.finish()
    assert not (tmp_path / "p").exists()
