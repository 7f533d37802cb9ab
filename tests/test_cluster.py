"""Trawl on a real Spark standalone cluster (a master and two workers on loopback).

Two crawl rounds through ``./submit.sh crawl --master spark://...`` (the project's code
shipped as a --py-files archive) must give the crawldb of the same rounds in local mode
(same URLs, statuses and content hashes), run fetch tasks on both workers (read from
Spark's event log), and stay polite on the wire.
"""

import json

import pytest
from cluster import StandaloneCluster
from crawlruns import AGENT, crawl_args, crawldb_summary, run_to_end, seeds_file
from weblog import entries_for, host_delays, politeness_violations

pytestmark = [pytest.mark.spark, pytest.mark.web, pytest.mark.cluster]


def fetch_task_executors(event_dir) -> set[str]:
    """Executors that ran tasks of the Spark jobs writing fetch tables (described
    ``trawl fetch segment=...`` by engine.delta_commits.delta_commit_message)."""
    stages, executors = set(), set()
    for log in event_dir.rglob("events_*"):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerJobStart":
                description = event.get("Properties", {}).get("spark.job.description") or ""
                if description.startswith("trawl fetch segment="):
                    stages.update(event["Stage IDs"])
            elif event["Event"] == "SparkListenerTaskEnd" and event["Stage ID"] in stages:
                executors.add(event["Task Info"]["Executor ID"])
    return executors


def test_two_rounds_on_a_standalone_cluster_equal_local_mode(spark, web, reference, tmp_path):
    events = tmp_path / "events"
    events.mkdir()
    data = tmp_path / "data"
    args = crawl_args(web, data, "cluster", 2) + ["--seeds", str(seeds_file(web, tmp_path))]
    for setting in (
        "spark.eventLog.enabled=true",
        "spark.eventLog.compress=false",
        f"spark.eventLog.dir=file://{events}",
        "fetcher.partitions=4",
        "spark.executor.memory=1g",
    ):
        args += ["--conf", setting]
    with StandaloneCluster(tmp_path / "cluster", workers=2) as cluster:
        run_to_end([*args, "--master", cluster.url], tmp_path / "out.txt")
        finished = cluster.state()["completedapps"]
    assert [app["state"] for app in finished] == ["FINISHED"]
    assert crawldb_summary(spark, data) == reference
    assert len(fetch_task_executors(events)) == 2  # fetch partitions on both workers
    assert politeness_violations(entries_for(web, AGENT("cluster")), host_delays(web)) == []
