"""Each host's robots.txt in a fetch task: taken from the cache of earlier rounds or
fetched (its redirects followed, each hop a polite request), its rules applied to the
host (Crawl-delay, or the host stopped for the round), its sitemaps queued."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from lib import vocabulary as st
from lib.fetching.hoststate import HostState
from lib.fetching.politeness import PoliteScheduler
from lib.fetching.robots import RobotsRules
from lib.fetching.rows import robots_row
from lib.fetching.sitemap_queue import SitemapQueue
from lib.fetching.tasks import CachedRobots, Handler, Request, RobotsTask
from lib.url.normalize import resolve, scheme_of
from lib.vocabulary import REASON_AGENT, REASON_DNS, REASON_PRIVATE

ROBOTS_MAX_HOPS = 5  # RFC 9309 section 2.3.1.2
REDIRECTS = (301, 302, 303, 307, 308)
# Failures that concern the host rather than the URL: its other URLs get the same outcome.
HOST_FAILURES = {REASON_PRIVATE: st.NOT_FOUND, REASON_DNS: st.RETRY, REASON_AGENT: st.RETRY}


class RobotsKeeper:
    """The rules of the task's hosts (``rules``), and the robots.txt fetches that make
    them. ``emit(exchange, row)`` archives an exchange and gives a row; ``drain(host,
    outcome, reason)`` gives up the host's other URLs; ``clock`` is the wall clock."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        cache: Mapping[str, CachedRobots],
        scheduler: PoliteScheduler,
        hosts: Mapping[str, HostState],
        sitemaps: SitemapQueue,
        sink: tuple[Callable, Callable, Callable[[], float]],
    ):
        self.conf = conf
        self.cache = cache
        self.scheduler = scheduler
        self.hosts = hosts
        self.sitemaps = sitemaps
        self.emit, self.drain, self.clock = sink
        self.rules: dict[str, RobotsRules] = {}

    def open_host(self, host: str, origin: str) -> None:
        """A host's first URL: its cached rules, else its robots.txt queued first."""
        cached = self.cache.get(host)
        if cached is not None:
            self.rules[host] = self.parse(cached.status, cached.body)
            self.hosts[host].crawl_delay = self.rules[host].crawl_delay()
        else:
            self.scheduler.add(host, RobotsTask(f"{origin}/robots.txt", f"{origin}/robots.txt"))

    def fetch(self, host: str, task: RobotsTask) -> Handler:
        """Fetch one hop of the host's robots.txt (see ``tasks.Handler``)."""
        exchange = yield Request(task.url)
        # Not fed to the adaptive delay: robots.txt is often static and fast where pages
        # are not, and would make a slow server look quick.
        pause = self.hosts[host].delay()
        location = exchange.header("Location")
        if exchange.status in REDIRECTS and location and task.hops < ROBOTS_MAX_HOPS:
            target = resolve(location, task.url)
            if target and scheme_of(target) in ("http", "https"):
                # The hop has its row (and its WARC pointer); the cache takes the last.
                row = robots_row(host, task, exchange, exchange.status, self.clock())
                row["redirect_to"] = target
                self.emit(exchange, row)
                self.scheduler.add_first(host, replace(task, url=target, hops=task.hops + 1))
                return exchange.ended_monotonic + pause
        status = exchange.status if exchange.error is None else None
        if exchange.error in HOST_FAILURES:
            self.rules[host] = self.parse(None, b"")
            self.emit(exchange, robots_row(host, task, exchange, None, self.clock()))
            self.drain(host, HOST_FAILURES[exchange.error], exchange.error)
            return exchange.ended_monotonic + pause
        rules = self.parse(status, exchange.body)
        self.rules[host] = rules
        self.emit(exchange, robots_row(host, task, exchange, status, self.clock()))
        if self._apply(host, rules):
            self.sitemaps.after_robots(host, task.first_url.removesuffix("/robots.txt"), rules)
        return exchange.ended_monotonic + self.hosts[host].delay()

    def parse(self, status: int | None, body: bytes) -> RobotsRules:
        """Rules of a robots.txt answer (``None``: none came)."""
        return RobotsRules.from_response(
            status, body, self.conf["http.agent.name"], self.conf["robots.content.limit"]
        )

    def _apply(self, host: str, rules: RobotsRules) -> bool:
        """Apply fetched rules to the host; False when they stop it for the round."""
        if rules.unavailable:
            self.drain(host, st.RETRY, st.REASON_ROBOTS_UNAVAILABLE)
            return False
        delay = rules.crawl_delay()
        if delay is not None and delay > self.conf["fetcher.max.crawl.delay"]:
            self.drain(host, st.SKIPPED, st.REASON_CRAWL_DELAY)
            return False
        self.hosts[host].crawl_delay = delay
        return True
