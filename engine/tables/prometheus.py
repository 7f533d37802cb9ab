"""A crawl's health (``engine.tables.health``) in Prometheus' text exposition format:
the families the API serves at ``/metrics`` and ``metrics.textfile`` holds for
node_exporter's textfile collector. Every family is a gauge named ``trawl_*`` with its
unit in its name; conf/prometheus/trawl-alerts.yml alerts on them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from engine.tables.health import STATUS_CLASSES, Figures, Health
from lib import vocabulary as st

STATUSES = (
    st.UNFETCHED,
    st.FETCHED,
    st.GONE,
    st.REDIR_TEMP,
    st.REDIR_PERM,
    st.NOTMODIFIED,
    st.DUPLICATE,
)
# The last fetch's figures, each a family of its own: (figure, name, help).
FETCH_FIGURES = (
    ("urls", "trawl_fetch_urls", "URLs the last fetch listed"),
    ("pages", "trawl_fetch_pages", "Pages the last fetch got (answers with a body)"),
    ("errors", "trawl_fetch_errors", "URLs the last fetch failed on"),
    ("deferred", "trawl_fetch_deferred_urls", "URLs the last fetch left to the next round"),
    ("bytes", "trawl_fetch_bytes", "Bytes the last fetch downloaded"),
    ("pages_per_second", "trawl_fetch_pages_per_second", "Pages per second of the last fetch"),
)


def families(figures: Figures) -> Iterator:
    """The metric families of ``figures``."""
    from prometheus_client.core import GaugeMetricFamily as Gauge

    urls = Gauge("trawl_crawldb_urls", "URLs of the crawldb by status", labels=["status"])
    for status in sorted(set(STATUSES) | set(figures.statuses)):
        urls.add_metric([status], figures.statuses.get(status, 0))
    yield urls
    yield Gauge("trawl_crawldb_all_urls", "URLs of the crawldb", sum(figures.statuses.values()))
    yield from _job_families(figures)
    yield from _fetch_families(figures)
    robots = Gauge("trawl_robots_answers", "Cached robots.txt answers by class", labels=["class"])
    for name in STATUS_CLASSES:
        robots.add_metric([name], figures.robots.get(name, 0))
    yield robots
    disk = figures.disk
    yield Gauge("trawl_data_directory_bytes", "Bytes of the data directory", disk.get("data", 0))
    yield Gauge(
        "trawl_disk_free_bytes", "Free bytes of the data directory's disk", disk.get("free", 0)
    )
    yield Gauge("trawl_disk_size_bytes", "Bytes of the data directory's disk", disk.get("size", 0))


def _job_families(figures: Figures) -> Iterator:
    from prometheus_client.core import GaugeMetricFamily as Gauge

    seconds = Gauge("trawl_job_duration_seconds", "Seconds of each job's last run", labels=["job"])
    finished = Gauge(
        "trawl_job_last_finished_timestamp_seconds",
        "When each job's last run finished (Unix time)",
        labels=["job"],
    )
    for job, run in sorted(figures.jobs.items()):
        seconds.add_metric([job], run["seconds"])
        finished.add_metric([job], run["finished"])
    yield seconds
    yield finished
    updated = figures.jobs.get("updatedb")
    yield Gauge(
        "trawl_last_round_finished_timestamp_seconds",
        "When the last round's updatedb finished (Unix time; 0: none yet)",
        updated["finished"] if updated else 0,
    )
    dedup = figures.jobs.get("dedup", {}).get("figures", {})
    yield Gauge(
        "trawl_dedup_marked_urls",
        "Pages the last dedup pass marked duplicate",
        dedup.get("duplicates", 0),
    )


def _fetch_families(figures: Figures) -> Iterator:
    from prometheus_client.core import GaugeMetricFamily as Gauge

    fetch = figures.jobs.get("fetch", {}).get("figures", {})
    for figure, name, text in FETCH_FIGURES:
        yield Gauge(name, text, fetch.get(figure, 0))
    outcomes = Gauge(
        "trawl_fetch_outcome_urls", "URLs of the last fetch by outcome", labels=["outcome"]
    )
    for key, value in sorted(fetch.items()):
        if key.startswith("outcomes."):
            outcomes.add_metric([key.removeprefix("outcomes.")], value)
    yield outcomes
    hosts = Gauge(
        "trawl_fetch_hosts",
        "Hosts of the last fetch: all, erroring (some errors), failing (no page, errors only)",
        labels=["state"],
    )
    hosts.add_metric(["all"], len(figures.hosts))
    hosts.add_metric(["erroring"], sum(1 for h in figures.hosts if h["errors"]))
    failing = sum(1 for h in figures.hosts if h["errors"] and not h["pages"])
    hosts.add_metric(["failing"], failing)
    yield hosts
    held = Gauge(
        "trawl_hosts_held",
        "Hosts (hostdb) the last round that asked them held back: pages left to retry or "
        "skipped (held_back), or their circuit breaker opened (circuit_open)",
        labels=["state"],
    )
    for state in ("held_back", "circuit_open"):
        held.add_metric([state], figures.held.get(state, 0))
    yield held


class _Collector:
    def __init__(self, figures: Figures):
        self._figures = figures

    def collect(self):
        yield from families(self._figures)


def exposition(figures: Figures) -> bytes:
    """The families in the Prometheus text format (version 0.0.4)."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(figures))
    return generate_latest(registry)


def after_round(conf, root: str) -> None:
    """``metrics.textfile``, when set, written once a round's figures are in the metrics
    table (a local data directory: the figures are read from its files)."""
    from engine.runtime import write_behind

    path = conf["metrics.textfile"]
    if not path or "://" in str(root).removeprefix("file://"):
        return
    write_behind.wait("metrics")
    write_textfile(path, str(root).removeprefix("file://"))


def write_textfile(path: str, root: str) -> None:
    """Write the data directory's families to ``path`` for node_exporter's textfile
    collector: written beside and renamed, so that the collector never reads half."""
    text = exposition(Health(root).figures())
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "wb") as out:
        out.write(text)
    os.replace(temporary, path)
