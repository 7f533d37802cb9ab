"""Trawl on a real Spark standalone cluster (a master and two workers on loopback).

Two crawl rounds through ``./submit.sh crawl --master spark://...`` (the project's code
shipped as a --py-files archive) must give the crawldb of the same rounds in local mode
(same URLs, statuses and content hashes) even though an executor JVM is killed in the
middle of round 2's fetch, run fetch tasks on both workers (read from Spark's event log),
and stay polite on the wire. One crawl proves both: the cluster's correctness and a lost
executor's cost share its two rounds. The plugin crawl of test_plugins runs
there too, its plugin package installed where the executors' Python finds it.
"""

import json
import os
import signal
import subprocess
import time
import urllib.parse
from collections import Counter

import pytest
from cluster import StandaloneCluster
from crawlruns import AGENT, ROOT, crawl_args, crawldb_summary, run_to_end, seeds_file
from plugincrawl import check_plugin_crawl, install_package, plugin_crawl_args
from test_failures import during_fetch, second_segment
from warcio.archiveiterator import ArchiveIterator
from weblog import entries_for, host_delays, politeness_violations

from engine.runtime.layout import DataDir

pytestmark = [pytest.mark.spark, pytest.mark.web, pytest.mark.cluster]


def fetch_task_workers(event_dir) -> set[str]:
    """Workers (by their web UI's address in the executors' log URLs) whose executors ran
    tasks of the Spark jobs writing fetch tables (described ``trawl fetch segment=...``
    by engine.tables.delta_commits.delta_commit_message)."""
    stages, executors, worker_of = set(), set(), {}
    for log in event_dir.rglob("events_*"):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerExecutorAdded":
                stdout_log = event["Executor Info"]["Log Urls"]["stdout"]
                worker_of[event["Executor ID"]] = urllib.parse.urlsplit(stdout_log).netloc
            elif event["Event"] == "SparkListenerJobStart":
                description = event.get("Properties", {}).get("spark.job.description") or ""
                if description.startswith("trawl fetch segment="):
                    stages.update(event["Stage IDs"])
            elif event["Event"] == "SparkListenerTaskEnd" and event["Stage ID"] in stages:
                executors.add(event["Task Info"]["Executor ID"])
    return {worker_of[executor] for executor in executors}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A master and two workers, shared by the tests of this module."""
    with StandaloneCluster(tmp_path_factory.mktemp("cluster"), workers=2) as started:
        yield started


def finished_apps(cluster) -> dict[str, str]:
    """Application id -> final state, of the applications the master saw end."""
    return {app["id"]: app["state"] for app in cluster.state()["completedapps"]}


def test_a_plugin_packages_crawl_runs_on_the_cluster(web, cluster, tmp_path):
    install_package()
    agent_url = AGENT("cluster-plugins")
    command = [str(ROOT / "submit.sh"), "crawl", *plugin_crawl_args(web, tmp_path, agent_url)]
    before = finished_apps(cluster)
    run_to_end([*command, "--master", cluster.url], tmp_path / "out.txt")
    ended = {app: state for app, state in finished_apps(cluster).items() if app not in before}
    assert list(ended.values()) == ["FINISHED"]
    check_plugin_crawl(web, tmp_path, agent_url)


def executor_pids() -> list[int]:
    """The executor JVMs of the cluster's application (CoarseGrainedExecutorBackend)."""
    found = subprocess.run(
        ["pgrep", "-f", "CoarseGrainedExecutorBackend"], capture_output=True, text=True
    )
    return [int(pid) for pid in found.stdout.split()]


def warc_captures(segment) -> Counter:
    """Response and revisit records per target URI in the segment's WARC files."""
    captures = Counter()
    for path in sorted((segment / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type in ("response", "revisit"):
                    captures[record.rec_headers.get_header("WARC-Target-URI")] += 1
    return captures


def test_two_rounds_with_a_lost_executor_equal_local_mode(spark, web, reference, cluster, tmp_path):
    """Two rounds on the cluster, with an executor JVM killed (SIGKILL) mid-fetch of round
    2: the application finishes, the crawldb equals local mode's, fetch tasks ran on both
    workers, each segment has one fetch row and one WARC capture per URL, politely; the
    URLs asked twice on the wire were all first asked before the kill (by the lost task,
    which had not committed them)."""
    name = "cluster"
    data = tmp_path / "data"
    events = tmp_path / "events"
    events.mkdir()
    args = crawl_args(web, data, name, 2) + ["--seeds", str(seeds_file(web, tmp_path))]
    for setting in (
        "spark.eventLog.enabled=true",
        "spark.eventLog.compress=false",
        f"spark.eventLog.dir=file://{events}",
        "fetcher.partitions=4",
        "spark.executor.memory=1g",
    ):
        args += ["--conf", setting]
    out = tmp_path / "out.txt"
    before = finished_apps(cluster)
    with open(out, "w") as sink:
        process = subprocess.Popen(
            [*args, "--master", cluster.url],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300
        while not during_fetch(DataDir.at(data), web, name):
            assert process.poll() is None, f"crawl ended before fetch: {out.read_text()[-2000:]}"
            assert time.monotonic() < deadline, "never reached round 2's fetch"
            time.sleep(0.05)
        killed_at = time.time()
        victims = executor_pids()
        assert victims, "no executor to kill"
        os.kill(victims[0], signal.SIGKILL)
        process.wait(timeout=600)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0, out.read_text()[-3000:]
    assert "finishing segment" not in out.read_text()  # the round itself completed
    ended = {app: state for app, state in finished_apps(cluster).items() if app not in before}
    assert list(ended.values()) == ["FINISHED"]
    assert crawldb_summary(spark, data) == reference
    assert len(fetch_task_workers(events)) == 2  # fetch partitions on both workers
    segment = second_segment(DataDir.at(data))
    fetched = spark.read.format("delta").load(segment.table("fetch"))
    listed = sorted(
        r["url"] for r in spark.read.format("delta").load(segment.table("fetchlist")).collect()
    )
    rows = sorted(r["url"] for r in fetched.where("origin = 'fetchlist'").collect())
    assert rows == listed  # one fetch row per listed URL
    captures = warc_captures(tmp_path / "data" / "segments" / segment.name)
    answered = [r["url"] for r in fetched.where("origin IN ('fetchlist', 'redirect')").collect()]
    assert all(captures[url] <= 1 for url in answered), captures.most_common(3)
    log = entries_for(web, AGENT(name))
    assert politeness_violations(log, host_delays(web)) == []
    started = os.path.getmtime(tmp_path / "data" / "segments" / segment.name / "_generated.done")
    round_two = [e for e in log if e["start"] > started and e["path"] != "/robots.txt"]
    asked = Counter((e["host"], e["path"]) for e in round_two)
    twice = {key for key, count in asked.items() if count > 1}
    first = {
        key: min(e["start"] for e in round_two if (e["host"], e["path"]) == key) for key in twice
    }
    assert all(when < killed_at for when in first.values()), first
    print(f"URLs asked twice on the wire after the executor was lost: {len(twice)}")
