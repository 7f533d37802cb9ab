"""The fetcher of one fetch-list partition (data flow step 3), without Spark.

``PartitionFetcher.run(items)`` takes the partition's fetch-list rows and yields one
fetch-result row per URL (``crawldb.schema.FETCH`` columns, times in epoch ms). Inside:

- a ``PoliteScheduler`` gives each host to one thread at a time and spaces its requests
  by ``fetcher.server.delay`` (or the robots.txt Crawl-delay, when larger);
- each host's first request is its ``/robots.txt`` (redirects followed up to 5 hops, each
  hop a polite request); a disallowed URL is never requested;
- redirects to the same host are followed through the host's queue up to
  ``http.redirect.max`` hops; other targets are recorded for a later round;
- every exchange that got an answer goes to the WARC file, written by the calling
  thread only.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from crawldb import status as st
from lib.http import Exchange, HttpClient
from lib.politeness import PoliteScheduler
from lib.robots import RobotsRules
from lib.urls import UrlFilter, clean, host_of, resolve
from lib.warc import WarcFile

ROBOTS_MAX_HOPS = 5  # RFC 9309 section 2.3.1.2


@dataclass
class FetchItem:
    """One URL to fetch, with what its result row carries forward."""

    url: str
    depth: int
    score: float
    origin: str = "fetchlist"
    hops: int = 0


@dataclass
class RobotsTask:
    """Fetch (one hop of) a host's robots.txt."""

    url: str
    hops: int = 0


class PartitionFetcher:
    """Fetches a partition's URLs politely; yields result rows."""

    def __init__(self, conf: Mapping[str, Any], warc: WarcFile | None):
        self.conf = conf
        self.warc = warc
        self.threads = conf["fetcher.threads.fetch"]
        self.client = HttpClient(conf, pool_size=max(self.threads, 1))
        self.url_filter = UrlFilter(conf)
        self.scheduler = PoliteScheduler(conf["fetcher.server.delay"])
        self.robots: dict[str, RobotsRules] = {}
        self.seen: set[str] = set()
        self._results: queue.Queue = queue.Queue()

    def run(self, rows: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
        """Fetch every row (``url``, ``host``, ``depth``, ``score``); yield result rows."""
        hosts = self._enqueue(rows)
        workers = [
            threading.Thread(target=self._work, name=f"fetcher-{i}", daemon=True)
            for i in range(min(self.threads, hosts))
        ]
        for worker in workers:
            worker.start()
        finished = 0
        while finished < len(workers):
            message = self._results.get()
            if message is None:
                finished += 1
                continue
            exchange, row = message
            if exchange is not None and exchange.status is not None and self.warc is not None:
                offset = self.warc.write_exchange(exchange)
                if row is not None:
                    row["warc_offset"] = offset
                    row["warc_file"] = self.warc.path.rsplit("/", 1)[-1]
            if row is not None:
                yield row
        self.client.close()

    def _enqueue(self, rows: Iterable[Mapping[str, Any]]) -> int:
        for row in rows:
            host = row["host"]
            if row["url"] in self.seen:
                continue
            self.seen.add(row["url"])
            if not self.scheduler.knows(host):
                parts = urlsplit(row["url"])
                self.scheduler.add(host, RobotsTask(f"{parts.scheme}://{parts.netloc}/robots.txt"))
            self.scheduler.add(host, FetchItem(row["url"], row["depth"], row["score"]))
        return self.scheduler.host_count

    def _work(self) -> None:
        try:
            while (step := self.scheduler.acquire()) is not None:
                host, task = step
                end = None
                try:
                    end = self._handle(host, task)
                finally:
                    self.scheduler.release(host, end)
        finally:
            self._results.put(None)

    def _handle(self, host: str, task: RobotsTask | FetchItem) -> float | None:
        """Process one task of a held host; returns when its request ended, if one was made."""
        if isinstance(task, RobotsTask):
            return self._fetch_robots(host, task)
        rules = self.robots[host]
        if not rules.allowed(task.url):
            self._emit(None, self._row(task, st.ROBOTS_DENIED, st.REASON_ROBOTS_DENIED))
            return None
        exchange = self.client.get(task.url)
        self._emit(exchange, self._result_row(host, task, exchange))
        return exchange.ended_monotonic

    def _fetch_robots(self, host: str, task: RobotsTask) -> float:
        exchange = self.client.get(task.url)
        self._emit(exchange, None)
        location = exchange.header("Location")
        if exchange.status in (301, 302, 303, 307, 308) and location:
            target = resolve(location, task.url)
            if target and task.hops < ROBOTS_MAX_HOPS and host_of(target) == host:
                self.scheduler.add_first(host, RobotsTask(target, task.hops + 1))
                return exchange.ended_monotonic
        rules = RobotsRules.from_response(
            exchange.status,
            exchange.body,
            self.conf["http.agent.name"],
            self.conf["robots.content.limit"],
        )
        self.robots[host] = rules
        self._apply_robots(host, rules)
        return exchange.ended_monotonic

    def _apply_robots(self, host: str, rules: RobotsRules) -> None:
        if rules.unavailable:
            self._drain(host, st.RETRY, st.REASON_ROBOTS_UNAVAILABLE)
            return
        delay = rules.crawl_delay()
        if delay is not None and delay > self.conf["fetcher.max.crawl.delay"]:
            self._drain(host, st.SKIPPED, st.REASON_CRAWL_DELAY)
            return
        if delay is not None and delay > self.conf["fetcher.server.delay"]:
            self.scheduler.set_delay(host, delay)

    def _drain(self, host: str, outcome: str, reason: str) -> None:
        for item in self.scheduler.take_remaining(host):
            self._emit(None, self._row(item, outcome, reason))

    def _result_row(self, host: str, task: FetchItem, exchange: Exchange) -> dict[str, Any]:
        if exchange.error is not None:
            outcome = st.NOT_FOUND if exchange.error == st.REASON_INVALID_URL else st.RETRY
            return self._row(task, outcome, exchange.error, exchange)
        code = exchange.status
        outcome = st.outcome_of_http(code)
        row = self._row(task, outcome, None if code == 200 else st.http_reason(code), exchange)
        if outcome in (st.MOVED, st.TEMP_MOVED):
            row["redirect_to"] = self._follow(host, task, exchange)
        return row

    def _follow(self, host: str, task: FetchItem, exchange: Exchange) -> str | None:
        """Normalized redirect target; queued now when on this host and within the limit."""
        location = exchange.header("Location")
        target = resolve(location, task.url) if location else None
        key = clean(target, self.url_filter)[0] if target else None
        if key is None:
            return None
        same_host = host_of(key) == host
        if same_host and task.hops < self.conf["http.redirect.max"] and key not in self.seen:
            self.seen.add(key)
            follow = FetchItem(key, task.depth, task.score, origin="redirect", hops=task.hops + 1)
            self.scheduler.add_first(host, follow)
        return key

    def _row(
        self, task: FetchItem, outcome: str, reason: str | None, exchange: Exchange | None = None
    ) -> dict[str, Any]:
        row = {
            "url": task.url,
            "host": host_of(task.url),
            "fetch_status": outcome,
            "reason": reason,
            "depth": task.depth,
            "score": task.score,
            "origin": task.origin,
            "truncated": False,
            "fetched_at": int(time.time() * 1000),  # decision time when nothing was requested
        }
        if exchange is not None:
            row.update(_exchange_columns(exchange))
        return row

    def _emit(self, exchange: Exchange | None, row: dict[str, Any] | None) -> None:
        self._results.put((exchange, row))


def _exchange_columns(exchange: Exchange) -> dict[str, Any]:
    return {
        "http_status": exchange.status,
        "fetched_at": int(exchange.started * 1000),
        "duration_ms": exchange.duration_ms,
        "content_type": exchange.header("Content-Type"),
        "content": exchange.body if exchange.status is not None else None,
        "content_length": len(exchange.body),
        "truncated": exchange.truncated,
        "headers": {k.lower(): v for k, v in exchange.response_headers},
        "etag": exchange.header("ETag"),
        "last_modified": exchange.header("Last-Modified"),
    }
