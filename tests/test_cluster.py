"""Trawl on a real Spark standalone cluster (a master and two workers on loopback).

Two crawl rounds through ``./submit.sh crawl --master spark://...`` (the project's code
shipped as a --py-files archive) must give the crawldb of the same rounds in local mode
(same URLs, statuses and content hashes), run fetch tasks on both workers (read from
Spark's event log), and stay polite on the wire. The plugin crawl of test_plugins runs
there too, its plugin package installed where the executors' Python finds it.
"""

import json

import pytest
from cluster import StandaloneCluster
from crawlruns import AGENT, ROOT, crawl_args, crawldb_summary, run_to_end, seeds_file
from plugincrawl import check_plugin_crawl, install_package, plugin_crawl_args
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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A master and two workers, shared by the tests of this module."""
    with StandaloneCluster(tmp_path_factory.mktemp("cluster"), workers=2) as started:
        yield started


def finished_apps(cluster) -> dict[str, str]:
    """Application id -> final state, of the applications the master saw end."""
    return {app["id"]: app["state"] for app in cluster.state()["completedapps"]}


def test_two_rounds_on_a_standalone_cluster_equal_local_mode(
    spark, web, reference, cluster, tmp_path
):
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
    before = finished_apps(cluster)
    run_to_end([*args, "--master", cluster.url], tmp_path / "out.txt")
    ended = {app: state for app, state in finished_apps(cluster).items() if app not in before}
    assert list(ended.values()) == ["FINISHED"]
    assert crawldb_summary(spark, data) == reference
    assert len(fetch_task_executors(events)) == 2  # fetch partitions on both workers
    assert politeness_violations(entries_for(web, AGENT("cluster")), host_delays(web)) == []


def test_a_plugin_packages_crawl_runs_on_the_cluster(web, cluster, tmp_path):
    install_package()
    agent_url = AGENT("cluster-plugins")
    command = [str(ROOT / "submit.sh"), "crawl", *plugin_crawl_args(web, tmp_path, agent_url)]
    before = finished_apps(cluster)
    run_to_end([*command, "--master", cluster.url], tmp_path / "out.txt")
    ended = {app: state for app, state in finished_apps(cluster).items() if app not in before}
    assert list(ended.values()) == ["FINISHED"]
    check_plugin_crawl(web, tmp_path, agent_url)
