"""What a fetch task's hosts queue: URLs to fetch, robots.txt hops, and the request a
task's handler asks for."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass

from lib.exchange import Exchange, PriorCapture
from lib.vocabulary import ORIGIN_FETCHLIST


@dataclass(frozen=True)
class FetchItem:
    """One URL to fetch, with what its result row carries forward."""

    url: str
    depth: int
    score: float
    origin: str = ORIGIN_FETCHLIST
    hops: int = 0
    attempts: int = 0
    level: int = 0  # links followed in this round to reach it (fetcher.follow.outlinks.depth)
    etag: str | None = None  # validators of the copy fetched before: a conditional request
    last_modified: str | None = None
    prior: PriorCapture | None = None  # the archived capture a same payload revisits

    def conditional_headers(self) -> dict[str, str]:
        """If-None-Match / If-Modified-Since for a re-fetch (RFC 9110 13.1)."""
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


@dataclass(frozen=True)
class Request:
    """The GET a task's handler asks for."""

    url: str
    headers: Mapping[str, str] | None = None


# A task's handler: yields its request (at most one), is sent the exchange, and returns
# when the host may go next (None: no request was made).
Handler = Generator[Request, Exchange, float | None]


@dataclass(frozen=True)
class RobotsTask:
    """Fetch (one hop of) a host's robots.txt."""

    url: str
    first_url: str
    hops: int = 0


@dataclass(frozen=True)
class CachedRobots:
    """A robots.txt answer kept from an earlier round."""

    status: int
    body: bytes
