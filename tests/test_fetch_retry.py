"""A fetch task whose Python worker is killed mid-way is retried by Spark, and the segment
still ends with exactly one result row and one WARC response per fetched URL."""

import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import TEST_SERVER_DELAY, web_conf
from weblog import entries_for, politeness_violations, warc_page_responses

from engine.runtime.layout import DataDir
from jobs.fetch import fetch
from jobs.generate import generate
from jobs.inject import inject

pytestmark = [pytest.mark.spark, pytest.mark.web]
AGENT_URL = "https://trawl.invalid/test-retry"


def python_workers() -> list[int]:
    """PIDs of PySpark's Python worker daemon and the workers it forked."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"pyspark.daemon" in cmdline or b"pyspark/daemon.py" in cmdline:
                pids.append(int(entry.name))
    return pids


def kill_workers_after(web, requests: int, killed: list, stop: threading.Event) -> None:
    while not stop.is_set():
        pages = [e for e in entries_for(web, AGENT_URL) if e["path"].startswith("/page/")]
        if len(pages) >= requests:
            for pid in python_workers():
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                except ProcessLookupError:
                    pass
            return
        time.sleep(0.05)


def test_killed_fetch_task_is_retried_without_duplicates(spark, web, tmp_path, capsys):
    assert spark.sparkContext.master.startswith("local[2,"), "the session must allow retries"
    data = DataDir.at(tmp_path / "data")
    seeds = tmp_path / "seeds.txt"
    ring = web.site.ring
    urls = [f"{web.site.base(h)}/page/{k}" for h in range(ring) for k in range(1, 7)]
    seeds.write_text("\n".join(urls) + "\n")
    conf = web_conf(AGENT_URL, "fetcher.partitions=2", "job.progress.interval=0.5")
    inject(spark, conf, data, str(seeds))
    segment = data.segment(generate(spark, conf, data))
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=kill_workers_after, args=(web, 6, killed, stop))
    killer.start()
    try:
        fetch(spark, conf, data, segment)
    finally:
        stop.set()
        killer.join()
    assert killed, "no Python worker was killed: the test proved nothing"
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("fetch: ")]
    shown = [re.match(r"fetch: (\d+)/24 URLs \(.*%\), [\d.]+ URLs/s, ETA ", x) for x in lines]
    assert any(shown), lines  # progress lines while the fetch ran
    assert max(int(m.group(1)) for m in shown if m) <= 24
    assert not Path(segment.path, "_progress").exists()  # removed when fetch ends

    rows = spark.read.format("delta").load(segment.table("fetch")).where("origin != 'robots'")
    pages = rows.where("origin NOT IN ('probe', 'sitemap')")
    listed = sorted(r["url"] for r in pages.select("url").collect())
    assert listed == sorted(urls)  # one row per URL, none lost, none twice
    # The killed attempt's Parquet file was neither committed nor left behind.
    committed = {Path(uri).name for uri in rows.inputFiles()}
    assert {p.name for p in Path(segment.table("fetch")).glob("*.parquet")} == committed
    assert len(committed) == 2  # one file a partition
    answered = sorted(r["url"] for r in rows.where("http_status IS NOT NULL").collect())
    assert sorted(warc_page_responses(segment)) == answered
    log = entries_for(web, AGENT_URL)
    assert len([e for e in log if e["path"].startswith("/page/")]) > len(urls)  # refetched
    assert politeness_violations(log, lambda host: TEST_SERVER_DELAY) == []
