"""Failures cost a retry, never data: real driver processes killed by PID, then rerun.

Each scenario starts from a copy of the reference crawl's data directory after its first
round and runs ``./submit.sh crawl --rounds 1`` against the local web in its own process
group; it kills the whole group (bash, spark-submit's JVM, the Python driver and its
workers) with SIGKILL in that round during fetch (which parses too, ``fetcher.parse``),
parse (a crawl with ``fetcher.parse=false``) or updatedb, then runs
``./submit.sh crawl --rounds 0``, which finishes the segment left unfinished. The
crawldb must then hold the same URLs, statuses and content hashes as the uninterrupted
crawl, every segment one fetch row per listed URL, and the request log no politeness
violation. While the first process runs, a second writer is refused at once.
"""

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from crawlruns import AGENT, ROOT, crawl_args, crawldb_summary, run_to_end, seeds_file
from weblog import entries_for, host_delays, politeness_violations

from engine.runtime.layout import DataDir

pytestmark = [pytest.mark.spark, pytest.mark.web]


def second_segment(data: DataDir):
    names = data.segment_names()
    return data.segment(names[1]) if len(names) > 1 else None


def during_fetch(data: DataDir, web, name: str) -> bool:
    segment = second_segment(data)
    if segment is None or not segment.done("generated") or segment.done("fetched"):
        return False
    started = os.path.getmtime(Path(segment.path) / "_generated.done")
    pages = [e for e in entries_for(web, AGENT(name)) if e["start"] > started]
    return len(pages) >= 4


def during_parse(data: DataDir, web, name: str) -> bool:
    segment = second_segment(data)
    return segment is not None and segment.done("fetched") and not segment.done("parsed")


def during_updatedb(data: DataDir, web, name: str) -> bool:
    segment = second_segment(data)
    if segment is None or not segment.done("parsed"):
        return False
    return time.time() - os.path.getmtime(Path(segment.path) / "_parsed.done") > 1.0


def check_second_writer_refused(data: Path, folder: Path) -> None:
    """Another writer on the same data directory fails fast with a clear message."""
    started = time.monotonic()
    other = subprocess.run(
        [
            str(ROOT / "submit.sh"),
            "inject",
            "--seeds",
            str(folder / "seeds.txt"),
            "--data",
            str(data),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    said = [line for line in (other.stdout + other.stderr).splitlines() if "inject" in line]
    assert other.returncode == 3, said
    assert any("in use by another Trawl job: crawl" in line for line in said), said
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("stage", ["fetch", "parse", "updatedb"])
def test_driver_killed_then_rerun_loses_nothing(
    stage, spark, web, reference, reference_round_one, tmp_path
):
    condition = {"fetch": during_fetch, "parse": during_parse, "updatedb": during_updatedb}[stage]
    data = tmp_path / "data"
    shutil.copytree(reference_round_one, data)
    seeds_file(web, tmp_path)  # for the second writer's inject
    out = tmp_path / "out.txt"
    # The parse job runs in a round only when the fetch tasks do not parse.
    own = ["--conf", "fetcher.parse=false"] if stage == "parse" else []
    if stage == "updatedb":  # by Spark: in the driver it is over before the kill
        own = ["--conf", "db.driver.urls=0"]
    args = [*crawl_args(web, data, stage, 1), *own]
    with open(out, "w") as sink:
        process = subprocess.Popen(
            args, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 300
        if stage == "fetch":  # while the crawl holds the directory (its lock is there)
            while not (data / "_lock").exists():
                assert time.monotonic() < deadline and process.poll() is None, out.read_text()
                time.sleep(0.05)
            check_second_writer_refused(data, tmp_path)
        while not condition(DataDir.at(data), web, stage):
            assert process.poll() is None, f"crawl ended before {stage}: {out.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"never reached {stage}"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    segment = second_segment(DataDir.at(data))
    stage_done = {"fetch": "fetched", "parse": "parsed", "updatedb": "updated"}[stage]
    assert not segment.done(stage_done), f"{stage} had finished: the kill proved nothing"
    lock = json.loads((data / "_lock").read_text())  # left behind by the killed driver
    assert lock["job"] == "crawl"

    run_to_end([*crawl_args(web, data, stage, 0), *own], out)  # finishes the segment
    assert "finishing segment" in out.read_text()
    assert crawldb_summary(spark, data) == reference
    for name in DataDir.at(data).segment_names():
        done = DataDir.at(data).segment(name)
        assert done.done("updated"), name
        listed = spark.read.format("delta").load(done.table("fetchlist")).select("url")
        fetched = (
            spark.read.format("delta")
            .load(done.table("fetch"))
            .where("origin IN ('fetchlist', 'redirect')")
        )
        urls = [r["url"] for r in fetched.where("origin = 'fetchlist'").collect()]
        assert sorted(urls) == sorted(r["url"] for r in listed.collect())  # one row each
    log = entries_for(web, AGENT(stage))
    assert politeness_violations(log, host_delays(web)) == []


def test_ctrl_c_stops_a_crawl_with_one_line_and_a_rerun_goes_on(
    spark, web, reference, reference_round_one, tmp_path
):
    data = tmp_path / "data"
    shutil.copytree(reference_round_one, data)
    out = tmp_path / "out.txt"
    with open(out, "w") as sink:
        process = subprocess.Popen(
            crawl_args(web, data, "ctrl-c", 1),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300
        while not during_fetch(DataDir.at(data), web, "ctrl-c"):
            assert process.poll() is None, f"crawl ended before fetch: {out.read_text()[-2000:]}"
            assert time.monotonic() < deadline, "never reached fetch"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C does, to the foreground group
        assert process.wait(timeout=120) == 130, out.read_text()[-3000:]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    printed = out.read_text()
    assert "Traceback" not in printed, printed[-3000:]
    assert printed.rstrip().splitlines()[-1] == (
        "crawl: interrupted; the stages already done are kept: run the same command again to go on"
    )
    assert not (data / "_lock").exists()  # released on the way out
    assert not second_segment(DataDir.at(data)).done("fetched")

    run_to_end([*crawl_args(web, data, "ctrl-c", 0)], out)  # finishes the segment
    assert "finishing segment" in out.read_text()
    assert crawldb_summary(spark, data) == reference
    assert politeness_violations(entries_for(web, AGENT("ctrl-c")), host_delays(web)) == []
