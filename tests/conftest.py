"""Shared fixtures: one SparkSession and one local test web per test run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lib.config import load_config
from testweb.server import TestWeb, loopback_hosts
from testweb.site import SPECIAL_ROLES

ROOT = Path(__file__).resolve().parent.parent

# Politeness figures of the test web used by the tests: small, so that rounds are quick,
# but large enough that a violation shows in the request log.
TEST_SERVER_DELAY = 0.25
TEST_CRAWL_DELAY = 0.6
RING = 4


@pytest.fixture(scope="session")
def web(tmp_path_factory) -> TestWeb:
    """The multi-host test web on 127.0.2.x: a ring of 4 linked hosts, then one host per
    special role (testweb.site.SPECIAL_ROLES), with its request log."""
    log = tmp_path_factory.mktemp("web") / "requests.jsonl"
    hosts = loopback_hosts(RING + len(SPECIAL_ROLES), subnet=2)
    server = TestWeb(hosts, 0, log, crawl_delay=TEST_CRAWL_DELAY, ring_size=RING)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def hdfs(tmp_path_factory):
    """``(hdfs://127.0.0.1:PORT, WebHDFS URL)`` of a real HDFS: the one .ci/run started
    (TRAWL_TEST_HDFS, TRAWL_TEST_WEBHDFS), else a MiniDFSCluster of this run's own."""
    if os.environ.get("TRAWL_TEST_HDFS"):
        yield os.environ["TRAWL_TEST_HDFS"], os.environ["TRAWL_TEST_WEBHDFS"]
        return
    from minihdfs import MiniHdfs

    server = MiniHdfs(tmp_path_factory.mktemp("minihdfs")).start()
    yield server.url, server.webhdfs
    server.stop()


def web_settings(agent_url: str | None, *settings: str, delay=TEST_SERVER_DELAY) -> list[str]:
    """The settings of a crawl of a loopback test web, written once for every test: its
    delay, its loopback addresses allowed, a User-Agent URL of its own (so that its
    requests can be told apart in the shared request log; None: the default's), then
    ``settings``, which may override any of them."""
    shared = [f"fetcher.server.delay={delay}", "fetcher.allow.private.networks=true"]
    if agent_url is not None:
        shared.append(f"http.agent.url={agent_url}")
    return [*shared, *settings]


def conf_args(settings: list[str]) -> list[str]:
    """``settings`` as a command line's ``--conf`` options."""
    return [part for setting in settings for part in ("--conf", setting)]


def web_conf_args(agent_url: str | None, *settings: str, delay=TEST_SERVER_DELAY) -> list[str]:
    """``web_settings`` as ``--conf`` options."""
    return conf_args(web_settings(agent_url, *settings, delay=delay))


def web_conf(agent_url: str | None, *settings: str, delay=TEST_SERVER_DELAY):
    """``web_settings`` over the defaults, as a loaded configuration."""
    return load_config(overrides=web_settings(agent_url, *settings, delay=delay))


@pytest.fixture()
def conf():
    """The default configuration with the test web's delays."""
    return web_conf(None)


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession with Delta Lake for the whole run (it takes ~10 s to start)."""
    from engine.runtime.session import build_spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session_conf = load_config(
        overrides=[
            "spark.ui.enabled=false",
            "spark.sql.shuffle.partitions=2",
            "spark.default.parallelism=2",
            # The session lives through every test, and each crawl's Delta logs and
            # snapshots stay cached in it: pyspark's default 1 GB ran out in CI.
            "spark.driver.memory=2g",
        ]
    )
    # local[2,3]: two cores, and a failed task is tried up to 3 times, as on a cluster.
    session = build_spark("tests", session_conf, "local[2,3]")
    yield session
    session.stop()


def pytest_collection_modifyitems(items):
    """A test that takes the ``spark`` fixture is a Spark test, marked or not: the fast
    tier (``-m "not spark"``) never starts the JVM."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


# A skipped test is a failing test here: nothing in this suite may skip.
_skipped: list[str] = []


def pytest_runtest_logreport(report):
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    if _skipped and exitstatus == 0:
        print(f"\nskipped tests count as failures: {', '.join(_skipped)}")
        session.exitstatus = 1


E2E_AGENT_URL = "https://trawl.invalid/test-e2e"


def crawl_conf_args() -> list[str]:
    """Configuration of the end-to-end crawl: the test web's settings, with a User-Agent
    of its own."""
    return web_conf_args(E2E_AGENT_URL)


@pytest.fixture(scope="session")
def crawled(spark, web, tmp_path_factory):
    """Three crawl rounds over the test web: the data directory, crawldb rows, request log."""
    from weblog import entries_for

    from engine.runtime.layout import DataDir
    from jobs import crawl

    root = tmp_path_factory.mktemp("crawl")
    seeds = root / "seeds.txt"
    seeds.write_text(
        f"# two of the four hosts, and a page robots.txt disallows for Trawl only\n"
        f"{web.seeds[0]}\nnot a url\n{web.seeds[2]}\n{web.site.base(2)}/page/5\tscore=0.5\n"
    )
    code = crawl.main(
        ["--seeds", str(seeds), "--rounds", "3", "--data", str(root / "data"), *crawl_conf_args()]
    )
    assert code == 0
    data = DataDir.at(root / "data")
    rows = [r.asDict() for r in spark.read.format("delta").load(data.crawldb).collect()]
    return data, rows, entries_for(web, E2E_AGENT_URL)


@pytest.fixture()
def crawled_copy(crawled, tmp_path):
    """``crawled`` with its data directory copied, for a test that changes it: the
    tests that read ``crawled`` then find it as the crawl left it, whatever ran before."""
    import shutil

    from engine.runtime.layout import DataDir

    data, rows, log = crawled
    shutil.copytree(data.root, tmp_path / "data")
    return DataDir.at(tmp_path / "data"), rows, log


@pytest.fixture(scope="session")
def reference_round_one(web, tmp_path_factory) -> Path:
    """The reference crawl's data directory after its first round, kept aside: the
    failure tests start from copies of it, so that each crawls only the round it kills."""
    import shutil

    from crawlruns import crawl_args, run_to_end, seeds_file

    folder = tmp_path_factory.mktemp("reference")
    args = crawl_args(web, folder / "data", "reference", 1)
    run_to_end([*args, "--seeds", str(seeds_file(web, folder))], folder / "out.txt")
    shutil.copytree(folder / "data", folder / "round-one")
    return folder / "round-one"


@pytest.fixture(scope="session")
def reference(spark, web, reference_round_one):
    """``(url -> (status, content hash))`` of a two-round crawl in local mode, uninterrupted
    (its second round run by a second ``crawl``, as a scheduler runs rounds): what the
    failure and cluster tests must end with."""
    from crawlruns import crawl_args, crawldb_summary, run_to_end

    data = reference_round_one.parent / "data"
    run_to_end(crawl_args(web, data, "reference", 1), data.parent / "out.txt")
    return crawldb_summary(spark, data)
