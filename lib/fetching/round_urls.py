"""The URLs a fetch task meets in its round: what it has seen, the links it follows and
the redirects it takes, so that no URL is fetched twice in a round, nor again when an
earlier round fetched it."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from lib.exchange import Exchange
from lib.fetching.follow import OutlinkFollower
from lib.fetching.tasks import FetchItem
from lib.scoring import outlink_shares
from lib.url.filter import UrlFilter, clean
from lib.url.normalize import host_of, resolve
from lib.vocabulary import ORIGIN_OUTLINK, ORIGIN_REDIRECT


class RoundUrls:
    """A task's URLs this round: the fetch list's, the sitemaps', the links followed in
    the round (``lib.fetching.follow``) and the redirect targets taken."""

    def __init__(self, conf: Mapping[str, Any], url_filter: UrlFilter, known: Collection[str]):
        """``known``: URLs of the task's hosts fetched in earlier rounds, which a redirect
        does not fetch again in this one (the crawldb has them, due when due)."""
        self.conf = conf
        self.url_filter = url_filter
        self.known = known
        self.seen: set[str] = set()
        self.follower = OutlinkFollower(conf, url_filter)
        self.followed = 0  # links queued by the follower
        # In-round level of each followed URL queued and not yet handled: a redirect that
        # reaches one at a lower level fetches it at once, and the queued item is dropped.
        self.tickets: dict[str, int] = {}

    def listed(self, url: str, host: str) -> bool:
        """Take a URL of the fetch list; False when it was already taken."""
        if url in self.seen:
            return False
        self.seen.add(url)
        if self.follower.enabled:
            self.follower.claim(url, host)
        return True

    def superseded(self, item: FetchItem) -> bool:
        """A followed link fetched meanwhile at a lower level, through a redirect."""
        return item.origin == ORIGIN_OUTLINK and item.url not in self.tickets

    def handled(self, item: FetchItem) -> None:
        """The item is being fetched (or given up): its ticket is spent."""
        self.tickets.pop(item.url, None)

    def retried(self, item: FetchItem) -> None:
        """The item goes back in its host's queue for another try in the round."""
        if item.origin == ORIGIN_OUTLINK:
            self.tickets[item.url] = item.level

    def links(self, host: str, task: FetchItem, exchange: Exchange) -> list[FetchItem]:
        """The page's links to its own host that the follower chooses, as items to queue."""
        if exchange.status != 200 or exchange.error is not None:
            return []
        headers = {
            "content-type": exchange.header("Content-Type"),
            "x-robots-tag": exchange.header("X-Robots-Tag"),
        }
        links, found = self.follower.links(
            task.url, host, task.depth, task.level, exchange.body, headers
        )
        if not links:
            return []
        # The score share parse and updatedb will give the link (all its links count).
        share = outlink_shares(task.score, host, [host] * found, self.conf)[0]
        new = [url for url in links if url not in self.seen]
        self.followed += len(new)
        level = task.level + 1
        for url in new:
            self.seen.add(url)
            self.tickets[url] = level
        return [
            FetchItem(url, task.depth + 1, share, origin=ORIGIN_OUTLINK, level=level) for url in new
        ]

    def redirect(self, host: str, task: FetchItem, exchange: Exchange):
        """``(target, item)``: the normalized redirect target (None when there is none),
        and the item to fetch it now, first in the host's queue, when it is on this host,
        within the hop limit and neither fetched nor known (else None)."""
        location = exchange.header("Location")
        target = resolve(location, task.url) if location else None
        key = clean(target, self.url_filter, resolved=True)[0] if target else None
        if key is None:
            return None, None
        within = host_of(key) == host and task.hops < self.conf["http.redirect.max"]
        within = within and key not in self.known
        queued_deeper = within and self.tickets.get(key, -1) > task.level
        if queued_deeper:  # a followed link not fetched yet: fetched now, at this level
            del self.tickets[key]
            self.followed -= 1
        if not within or (key in self.seen and not queued_deeper):
            return key, None
        self.seen.add(key)
        if self.follower.enabled and not queued_deeper:
            self.follower.claim(key, host)
        hops = task.hops + 1
        item = FetchItem(
            key, task.depth, task.score, origin=ORIGIN_REDIRECT, hops=hops, level=task.level
        )
        return key, item
