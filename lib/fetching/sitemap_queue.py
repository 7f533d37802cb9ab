"""Sitemaps a fetch task queues: those a host's robots.txt names on the host (else
``/sitemap.xml``), and those a fetched sitemap index lists, within ``sitemap.max.files``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lib.content.sitemaps import parse_sitemap
from lib.exchange import Exchange
from lib.fetching.politeness import PoliteScheduler
from lib.fetching.robots import RobotsRules
from lib.fetching.tasks import FetchItem
from lib.url.normalize import host_of
from lib.vocabulary import ORIGIN_SITEMAP


class SitemapQueue:
    """Queues sitemap URLs on their host's queue, each once, a bounded number per host."""

    def __init__(self, conf: Mapping[str, Any], scheduler: PoliteScheduler, seen: set[str]):
        """``seen``: the task's URLs this round (a sitemap is fetched once)."""
        self.conf = conf
        self.scheduler = scheduler
        self.seen = seen
        self.per_host: dict[str, int] = {}  # sitemaps queued per host this round

    def after_robots(self, host: str, origin: str, rules: RobotsRules) -> None:
        """After a host's robots.txt was fetched (so at most once per robots.cache.ttl):
        the sitemaps it names on this host, else /sitemap.xml. Sitemaps on other hosts
        are left out: their host may be another partition's."""
        if self.conf["sitemap.fetch"]:
            named = [url for url in rules.sitemaps if host_of(url) == host]
            for url in named if rules.sitemaps else [f"{origin}/sitemap.xml"]:
                self.add(host, url)

    def add(self, host: str, url: str) -> None:
        """Queue one sitemap, unless seen or the host's count is reached."""
        if url in self.seen or self.per_host.get(host, 0) >= self.conf["sitemap.max.files"]:
            return
        self.seen.add(url)
        self.per_host[host] = self.per_host.get(host, 0) + 1
        self.scheduler.add(host, FetchItem(url, 0, 0.0, origin=ORIGIN_SITEMAP))

    def follow_index(self, host: str, exchange: Exchange) -> None:
        """Queue the sitemaps a fetched sitemap index lists (its own host only)."""
        if exchange.status == 200 and exchange.error is None:
            parsed = parse_sitemap(exchange.url, exchange.body, self.conf["sitemap.content.limit"])
            if parsed.kind == "index":
                for entry in parsed.entries:
                    self.add(host, entry.loc)
