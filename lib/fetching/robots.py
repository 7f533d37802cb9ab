"""robots.txt decisions, as RFC 9309 says, over protego (no network I/O here).

``RobotsRules.from_response(status, body, ...)`` turns the outcome of fetching
``/robots.txt`` into rules:

- 2xx: the first ``robots.content.limit`` bytes are parsed with protego;
- 4xx (404 included): everything is allowed;
- 5xx, or no response at all: everything is disallowed for the round (the host is
  retried in a later round, reason ``robots_unavailable``).

Rules are matched against the product token of ``http.agent.name``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protego import Protego

ALLOW_ALL = "allow_all"
DISALLOW_ALL = "disallow_all"
PARSED = "parsed"


@dataclass
class RobotsRules:
    """The robots.txt verdicts for one host."""

    kind: str
    agent: str
    parser: Protego | None = None
    sitemaps: list[str] = field(default_factory=list)

    @classmethod
    def from_response(cls, status: int | None, body: bytes, agent: str, limit: int) -> RobotsRules:
        """Rules from the HTTP status (``None``: unreachable) and body of /robots.txt."""
        if status is None or status >= 500:
            return cls(DISALLOW_ALL, agent)
        if status >= 400:
            return cls(ALLOW_ALL, agent)
        if not 200 <= status < 300:
            # A redirect that could not be followed to an answer: treat as unavailable.
            return cls(DISALLOW_ALL, agent)
        text = body[:limit].decode("utf-8", errors="replace")
        parser = Protego.parse(text)
        return cls(PARSED, agent, parser, list(parser.sitemaps))

    def allowed(self, url: str) -> bool:
        """May the crawler fetch this URL of the host?"""
        if self.kind == PARSED:
            return self.parser.can_fetch(url, self.agent)
        return self.kind == ALLOW_ALL

    def crawl_delay(self) -> float | None:
        """The Crawl-delay for our agent in seconds, or ``None``."""
        if self.kind != PARSED:
            return None
        delay = self.parser.crawl_delay(self.agent)
        return float(delay) if delay is not None else None

    @property
    def unavailable(self) -> bool:
        """True when robots.txt could not be read (5xx or unreachable)."""
        return self.kind == DISALLOW_ALL
