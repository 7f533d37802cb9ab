"""A full disk is a clear failure, not a corrupt crawl: a fetch and an updatedb whose
data directory (a small tmpfs the test mounts) has no space left fail with exit code
255 and a message naming the directory; the crawldb and the robots.txt cache read the
same as before; once space is freed the rerun completes with nothing lost."""

import os
import shutil
import subprocess

import pytest
from crawlruns import AGENT, web_crawl_args
from deltalake import DeltaTable

from jobs import crawl, fetch, generate, updatedb

pytestmark = [pytest.mark.spark, pytest.mark.web]
LEFT = 8192  # bytes left free when the disk is "full": the lock file still fits


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "--lazy", str(mount)], check=False)


def fill(mount, left: int = LEFT) -> None:
    """A ballast file taking all the space of ``mount`` but ``left`` bytes."""
    free = shutil.disk_usage(mount).free
    with open(mount / "ballast", "wb") as out:
        out.write(b"\0" * max(free - left, 0))


def table_rows(path, columns: list[str]) -> list[tuple]:
    table = DeltaTable(str(path)).to_pyarrow_table(columns=columns).to_pylist()
    return sorted(tuple(row[c] for c in columns) for row in table)


def snapshot(data) -> tuple:
    crawldb = ["url", "status", "content_hash", "fetch_time", "segment"]
    return (
        DeltaTable(str(data / "crawldb")).version(),
        table_rows(data / "crawldb", crawldb),
        table_rows(data / "robots", ["host", "url", "fetched_at", "http_status"]),
    )


def test_a_full_disk_fails_fetch_and_updatedb_cleanly_and_the_rerun_loses_nothing(
    spark, web, small_disk, capsys
):
    data = small_disk / "data"
    args = web_crawl_args(data, AGENT("disk-full"), "db.max.depth=1")
    seeds = small_disk.parent / "seeds.txt"
    seeds.write_text(f"{web.seeds[0]}\n{web.seeds[1]}\n")
    assert crawl.main(["--seeds", str(seeds), "--rounds", "1", *args]) == 0
    assert generate.main(["--adddays", "31", *args]) == 0
    before = snapshot(data)
    capsys.readouterr()

    fill(small_disk)
    assert fetch.main(args) == 255
    err = capsys.readouterr().err
    assert f"fetch: no space left on the device of {data}" in err
    assert snapshot(data) == before  # no commit to the crawldb or the robots cache
    os.remove(small_disk / "ballast")
    assert fetch.main(args) == 0  # the rerun of the fetch

    fill(small_disk)
    fetched = snapshot(data)
    assert updatedb.main(args) == 255
    assert f"updatedb: no space left on the device of {data}" in capsys.readouterr().err
    assert snapshot(data) == fetched
    os.remove(small_disk / "ballast")
    assert crawl.main(["--rounds", "0", *args]) == 0  # finishes the segment left
    segment = sorted((data / "segments").iterdir())[-1]
    assert (segment / "_updated.done").exists()
    listed = table_rows(segment / "fetchlist", ["url"])
    rows = table_rows(segment / "fetch", ["url", "origin"])
    pages = [(url,) for url, origin in rows if origin not in ("robots", "sitemap", "probe")]
    assert sorted(set(pages)) == sorted(pages)  # one fetch row per URL
    assert set(listed) <= set(pages)
    after = dict((row[0], row[4]) for row in snapshot(data)[1])
    assert all(after[url] == segment.name for (url,) in listed)  # every listed URL applied
