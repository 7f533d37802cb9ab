"""Links a fetch task follows at once (Nutch's ``fetcher.follow.outlinks.depth``).

A page fetched from the fetch list is at level 0 of the round; a link followed from a
page at level ``k`` is at level ``k + 1``. A page below ``fetcher.follow.outlinks.depth``
gives up to ``(divisor // (k + 1)) * num.links`` new links to fetch in the same task,
counted as Nutch counts them: with its defaults (4 links, divisor 2), 8 from a fetch-list
page, 4 from the next level, none below. A crawl to depth D then takes one round
instead of D + 1, which saves the Spark work of D rounds.

Only links to the page's own host are followed: the task owns that host for the round,
so one connection per host and its delays hold; another host may be in another task.

updatedb's spider-trap defences (``engine.executors.admission``) are applied from what the task
knows: ``db.max.depth``; one URL per dedup key; ``db.max.urls.per.host`` and
``db.max.urls.per.pattern`` counted over the task's own URLs of the host. The crawldb
is not consulted, so in a recrawl a link may name a URL it already holds: that URL is
fetched again now, as with Nutch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from lib.content.parse import followable_links
from lib.url.filter import UrlFilter
from lib.url.normalize import host_of
from lib.url.traps import url_pattern


class OutlinkFollower:
    """Chooses the links of a fetched page to fetch in the same task."""

    def __init__(self, conf: Mapping[str, Any], url_filter: UrlFilter):
        """``url_filter``: the fetch task's own (links are filtered as parse filters them)."""
        self.conf = conf
        self.levels = conf["fetcher.follow.outlinks.depth"]
        self.num_links = conf["fetcher.follow.outlinks.num.links"]
        self.divisor = conf["fetcher.follow.outlinks.depth.divisor"]
        self.max_depth = conf["db.max.depth"]
        self.host_cap = conf["db.max.urls.per.host"]
        self.pattern_cap = conf["db.max.urls.per.pattern"]
        self.url_filter = url_filter
        self.normalizer = url_filter.normalizer
        self.keys: set[str] = set()  # dedup keys of the task's URLs
        self.per_host: Counter = Counter()
        self.per_pattern: Counter = Counter()

    @property
    def enabled(self) -> bool:
        """Whether links are followed at all."""
        return self.levels > 0

    def budget(self, level: int) -> int:
        """How many new links a page at in-round ``level`` may add."""
        if level >= self.levels:
            return 0
        return (self.divisor // (level + 1)) * self.num_links

    def claim(self, url: str, host: str) -> None:
        """Count a URL the task fetches anyway (its fetch list, a redirect target)."""
        self.keys.add(self.normalizer.dedup(url))
        self.per_host[host] += 1
        self.per_pattern[host, url_pattern(url)] += 1

    def links(
        self, page_url: str, host: str, depth: int, level: int, body: bytes, headers: dict
    ) -> tuple[list[str], int]:
        """``(links to fetch now, how many links the page has)`` for a page answered 200,
        at link ``depth`` from a seed; the links chosen are claimed. ``headers`` holds
        the page's Content-Type and X-Robots-Tag, lower-case names."""
        room = self.budget(level)
        if room <= 0 or (self.max_depth >= 0 and depth + 1 > self.max_depth):
            return [], 0
        found = followable_links(
            page_url, body, headers.get("content-type"), headers, self.conf, self.url_filter
        )
        chosen = []
        for url in found:
            if len(chosen) >= room:
                break
            if host_of(url) == host and self._admissible(url, host):
                self.claim(url, host)
                chosen.append(url)
        return chosen, len(found)

    def _admissible(self, url: str, host: str) -> bool:
        if self.normalizer.dedup(url) in self.keys:
            return False
        if 0 <= self.host_cap <= self.per_host[host]:
            return False
        return not 0 <= self.pattern_cap <= self.per_pattern[host, url_pattern(url)]
