"""The fetcher of one fetch-list partition (data flow step 3), without Spark.

``PartitionFetcher.run(items)`` takes the partition's fetch-list rows and yields one
fetch-result row per URL (``crawldb.schema.FETCH`` columns, times in epoch ms), plus one
row per robots.txt fetched (``origin = "robots"``), which feeds the robots cache. Inside:

- a ``PoliteScheduler`` holds each host while one of its requests is on its way and
  starts its next request no earlier than the pause ``lib.fetching.hoststate.HostState`` sets
  (server delay, Crawl-delay, adaptive delay, back-off); a host failing repeatedly is
  skipped for the round (circuit breaker) and its URLs go back to the crawldb unchanged;
- up to ``fetcher.threads.fetch`` requests (so as many hosts) are on their way at once,
  all driven by the calling thread through libcurl's multi interface (``lib.fetching.http``):
  each task is a generator that yields its one ``Request`` and gets the ``Exchange``
  back, so that the politeness logic reads as straight-line code;
- each host's first request is its ``/robots.txt`` unless the robots cache has it fresh
  (redirects followed up to 5 hops, each hop a polite request); a disallowed URL is
  never requested;
- redirects to the same host are followed through the host's queue up to
  ``http.redirect.max`` hops, never to a URL already fetched this round or in an
  earlier one (loop
  detection); other targets are recorded for a later round;
- with ``fetcher.follow.outlinks.depth`` set, a page's links to its own host are
  queued behind the host's other URLs (``lib.fetching.follow``);
- a host whose queue would hold the round long after the rest finished has the URLs
  that do not fit deferred to the next round, and a request still on its way when the
  round's budget is spent is cut there (``lib.fetching.roundtail``, looked at every
  ``TAIL_LOOK`` seconds; ``fetcher.round.tail.*``);
- ``fetcher.timelimit.mins`` ends the partition's round: URLs not reached go back
  unchanged; a retried Spark task (``attempt > 0``) first waits one pause per host, so
  that the retry cannot follow the failed attempt's last request too closely;
- every exchange that got an answer goes to the WARC file, written by the same thread
  between two looks at the network.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Collection, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from lib import vocabulary as st
from lib.archive.warc import WarcFile
from lib.content.sitemaps import parse_sitemap
from lib.exchange import Exchange
from lib.fetching.follow import OutlinkFollower
from lib.fetching.hoststate import HostState, now_utc, parse_retry_after
from lib.fetching.http import HttpClient
from lib.fetching.politeness import DONE, PoliteScheduler, Wait
from lib.fetching.resolver import Resolver
from lib.fetching.robots import RobotsRules
from lib.fetching.roundtail import HostOutlook, plan_tail
from lib.scoring import outlink_shares
from lib.url.filter import UrlFilter, clean
from lib.url.normalize import host_of, resolve, scheme_of
from lib.vocabulary import (
    ORIGIN_FETCHLIST,
    ORIGIN_OUTLINK,
    ORIGIN_PROBE,
    ORIGIN_REDIRECT,
    ORIGIN_ROBOTS,
    ORIGIN_SITEMAP,
    REASON_CIRCUIT,
    REASON_DNS,
    REASON_PRIVATE,
    REASON_TIME_LIMIT,
)

ROBOTS_MAX_HOPS = 5  # RFC 9309 section 2.3.1.2
_FOLLOWED_FROM = (ORIGIN_FETCHLIST, ORIGIN_REDIRECT, ORIGIN_OUTLINK)
# Longest wait for the network when no host is due: a bound, not a poll the rules rely
# on (a request ending wakes the loop at once). Unit: seconds.
IDLE_WAIT = 1.0
# How often the round's tail is looked at (lib.fetching.roundtail). Unit: seconds.
TAIL_LOOK = 1.0
_REDIRECTS = (301, 302, 303, 307, 308)
# Failures that concern the host rather than the URL: its other URLs get the same outcome.
_HOST_FAILURES = {REASON_PRIVATE: st.NOT_FOUND, REASON_DNS: st.RETRY}


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


class PartitionFetcher:
    """Fetches a partition's URLs politely; yields result rows."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        warc: WarcFile | None,
        robots_cache: Mapping[str, CachedRobots] | None = None,
        attempt: int = 0,
        probed_hosts: Collection[str] = (),
        known_urls: Collection[str] = (),
        clock: Callable[[], float] = time.time,
    ):
        """``probed_hosts``: hosts whose soft-404 probe answer is still cached (not asked);
        ``known_urls``: URLs of the partition's hosts fetched in earlier rounds, which a
        redirect does not fetch again in this one (the crawldb has them, due when due);
        ``clock``: the wall clock (epoch seconds) of the rows' and exchanges' times."""
        self.conf = conf
        self.clock = clock
        self.known_urls = known_urls
        self.warc = warc
        self.robots_cache = robots_cache or {}
        self.probed_hosts = probed_hosts
        self.attempt = attempt
        self.threads = conf["fetcher.threads.fetch"]
        self.resolver = Resolver(conf["fetcher.dns.ttl"], conf["fetcher.allow.private.networks"])
        self.client: HttpClient | None = None
        self.url_filter = UrlFilter(conf)
        self.scheduler = PoliteScheduler()
        self.hosts: dict[str, HostState] = {}
        self.robots: dict[str, RobotsRules] = {}
        self.seen: set[str] = set()
        self.sitemaps: dict[str, int] = {}  # sitemaps queued per host this round
        self.follower = OutlinkFollower(conf, self.url_filter)
        self.followed = 0  # links queued by the follower
        # In-round level of each followed URL queued and not yet handled: a redirect that
        # reaches one at a lower level fetches it at once, and the queued item is dropped.
        self.tickets: dict[str, int] = {}
        # Rows and exchanges to write, emptied after each look at the network: so few
        # pages wait in memory that the WARC file's writing needs no bound of its own.
        self._outbox: list[tuple[Exchange | None, dict[str, Any] | None]] = []
        self.starts: list[float] = []  # each request's start, seconds from the first
        self.asked: dict[str, float] = {}  # host -> when its request on its way started
        self.first_start: float | None = None
        self.deferred = 0  # URLs deferred to the next round
        self.eta_at: float | None = None  # epoch seconds of the last request, projected
        self.holding: list[str] = []  # hosts holding the round, at the last look
        self._next_look = 0.0
        minutes = conf["fetcher.timelimit.mins"]
        self.deadline = time.monotonic() + minutes * 60 if minutes >= 0 else None

    def run(self, rows: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
        """Fetch every row (``url``, ``host``, ``depth``, ``score``); yield result rows."""
        self._enqueue(rows)
        self.client = HttpClient(self.conf, len(self.hosts), self.resolver, self.clock)
        try:
            yield from self._drive()
        finally:
            self.client.close()
        for _host, task in self.scheduler.take_all():
            if isinstance(task, FetchItem) and not self._superseded(task):
                yield self._row(task, st.SKIPPED, REASON_TIME_LIMIT)

    def _drive(self) -> Iterator[dict[str, Any]]:
        """Start what may start, wait for answers, hand each to its task; until no host
        has anything left (or the round's time is up and nothing is on its way)."""
        while True:
            wait = self._start_ready()
            if self.first_start is not None and time.monotonic() >= self._next_look:
                self._look_at_tail()
            yield from self._written()
            if wait is None and not self.client.pending:
                return
            timeout = IDLE_WAIT if wait is None else wait
            if self.first_start is not None:  # wake for the next look at the tail
                timeout = min(timeout, max(self._next_look - time.monotonic(), 0.0))
            for (host, handler), exchange in self.client.poll(timeout):
                self._step(host, handler, exchange)
            yield from self._written()

    def _start_ready(self) -> float | None:
        """Start the tasks of the hosts that may go now, while fewer than
        ``fetcher.threads.fetch`` requests are on their way; returns how long until
        another may start (``None``: none will)."""
        while True:
            now = time.monotonic()
            if self.deadline is not None and now >= self.deadline:
                return None
            if self.client.pending >= self.threads:
                return IDLE_WAIT  # the loop wakes as soon as a request ends
            step = self.scheduler.next_ready()
            if step is DONE:
                return None
            if isinstance(step, Wait):
                wait = IDLE_WAIT if step.seconds is None else step.seconds
                return wait if self.deadline is None else min(wait, self.deadline - now)
            host, task = step
            self._step(host, self._handle(host, task), None)

    def _step(self, host: str, handler: Handler, exchange: Exchange | None) -> None:
        """Run a task's handler on to its request, or to its end (the host is released)."""
        if exchange is not None:
            self.asked.pop(host, None)
        try:
            request = handler.send(exchange)
        except StopIteration as end:
            self.scheduler.release(host, end.value)
            return
        now = time.monotonic()
        if self.first_start is None:
            self.first_start = now
            self._next_look = now + TAIL_LOOK
        self.starts.append(now - self.first_start)
        self.asked[host] = now
        self.client.start(request.url, request.headers, tag=(host, handler))

    def _look_at_tail(self) -> None:
        """Defer the URLs of hosts that would hold the round (``lib.fetching.roundtail``)."""
        now = time.monotonic()
        self._next_look = now + TAIL_LOOK
        outlooks = [self._outlook(queue, now) for queue in self.scheduler.waiting()]
        plan = plan_tail(outlooks, self.starts, now - self.first_start, self.conf)
        self.eta_at = self.clock() + max(plan.eta, self._in_flight_eta(now, plan.left))
        self.holding = plan.holding
        if not self.conf["fetcher.round.tail.defer"]:
            return
        if plan.left <= 0:  # the budget is spent: only long requests can still hold it
            slack = self.conf["fetcher.round.tail.slack"]
            self.client.cut(now - slack, "the round's end (fetcher.round.tail.*)")
        for outlook in outlooks:
            if outlook.host in plan.keep:
                cut = outlook.queued - plan.keep[outlook.host]
                for item in self.scheduler.take_last(outlook.host, cut):
                    self._defer(item)

    def _outlook(self, queue, now: float) -> HostOutlook:
        """A host's queue ahead: a request on its way is expected to take as long again
        as it has run so far, then the host's pace."""
        state = self.hosts[queue.host]
        pace = state.delay() + (state.response_time or 0.0)
        running = now - self.asked.get(queue.host, now)
        start = running + pace if queue.busy else max(queue.next_start - now, 0.0)
        return HostOutlook(queue.host, len(queue.items), start, pace)

    def _in_flight_eta(self, now: float, left: float) -> float:
        """Seconds until the longest request on its way ends, by the same guess (bounded by
        ``http.time.limit`` and, when the round's end cuts requests, by its budget)."""
        running = max((now - since for since in self.asked.values()), default=0.0)
        limit = self.conf["http.time.limit"]
        guess = min(running, limit - running) if limit >= 0 else running
        if self.conf["fetcher.round.tail.defer"]:
            guess = min(guess, max(left, 0.0))
        return max(guess, 0.0)

    def _defer(self, item: RobotsTask | FetchItem) -> None:
        if isinstance(item, FetchItem) and not self._superseded(item):
            if item.origin in _FOLLOWED_FROM:
                self.deferred += 1
            self.tickets.pop(item.url, None)
            self._emit(None, self._row(item, st.SKIPPED, st.REASON_DEFERRED))

    def _written(self) -> Iterator[dict[str, Any]]:
        """Write the exchanges waiting in the outbox; yield their rows."""
        outbox, self._outbox = self._outbox, []
        for exchange, row in outbox:
            yield from self._record(exchange, row)

    def _record(self, exchange: Exchange | None, row: dict[str, Any] | None):
        if exchange is not None and exchange.status is not None and self.warc is not None:
            offset = self.warc.write_exchange(exchange)
            if row is not None:
                row["warc_offset"] = offset
                row["warc_file"] = self.warc.name
        if row is not None:
            yield row

    def _enqueue(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            url, host = row["url"], row["host"]
            if url in self.seen:
                continue
            self.seen.add(url)
            if self.follower.enabled:
                self.follower.claim(url, host)
            if host not in self.hosts:
                self._add_host(host, url)
            item = FetchItem(
                url,
                row["depth"],
                row["score"],
                etag=row.get("etag"),
                last_modified=row.get("last_modified"),
            )
            self.scheduler.add(host, item)
        if self.attempt > 0:
            start = time.monotonic()
            for host, state in self.hosts.items():
                self.scheduler.not_before(host, start + state.delay())

    def _add_host(self, host: str, url: str) -> None:
        self.hosts[host] = HostState(self.conf)
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        cached = self.robots_cache.get(host)
        if cached is not None:
            self.robots[host] = self._rules(cached.status, cached.body)
            self.hosts[host].crawl_delay = self.robots[host].crawl_delay()
        else:
            self.scheduler.add(host, RobotsTask(f"{origin}/robots.txt", f"{origin}/robots.txt"))
        self._add_probe(host, origin)

    def _add_probe(self, host: str, origin: str) -> None:
        """Queue one request for a path that cannot exist: a host answering it with 200 shows
        its soft-404 page, which updatedb then recognises among the host's pages."""
        if self.conf["fetcher.soft404.probe"] and host not in self.probed_hosts:
            probe = f"{origin}/trawl-probe-{secrets.token_hex(8)}"
            self.scheduler.add(host, FetchItem(probe, 0, 0.0, origin=ORIGIN_PROBE))

    def _handle(self, host: str, task: RobotsTask | FetchItem) -> Handler:
        """Process one task of a held host (see ``Handler``)."""
        if isinstance(task, RobotsTask):
            return (yield from self._fetch_robots(host, task))
        if self._superseded(task):
            return None
        self.tickets.pop(task.url, None)
        if self._refused_before_request(host, task):
            return None
        exchange = yield Request(task.url, task.conditional_headers())
        verdict = self.hosts[host].after(
            exchange.server_seconds,  # the crawler's own stalls are not the host's
            exchange.status,
            failed=_failed(exchange) and task.origin != ORIGIN_PROBE,
            retry_after=parse_retry_after(exchange.header("Retry-After"), now_utc()),
        )
        if verdict.retry_url and task.attempts < self.conf["fetcher.max.retries.in.round"]:
            self._emit(exchange, None)  # the exchange is archived; the URL tries again
            if task.origin == ORIGIN_OUTLINK:
                self.tickets[task.url] = task.level
            self.scheduler.add_first(host, replace(task, attempts=task.attempts + 1))
        else:
            self._emit(exchange, self._result_row(host, task, exchange))
            if task.origin == ORIGIN_SITEMAP:
                self._follow_sitemap_index(host, exchange)
            elif task.origin in _FOLLOWED_FROM and self.follower.enabled:
                self._follow_links(host, task, exchange)
        if exchange.error in _HOST_FAILURES:
            self._drain(host, _HOST_FAILURES[exchange.error], exchange.error)
        elif verdict.open_circuit:
            self._drain(host, st.SKIPPED, REASON_CIRCUIT)
        # A response cut at a limit was still being sent when the client hung up; the
        # server's request ends when it notices, which the client cannot see (a loaded
        # server logged it after the client's cut): the host's own delay counts twice.
        pause = verdict.pause
        if exchange.truncated:
            pause += self.hosts[host].polite_delay()
        return exchange.ended_monotonic + pause

    def _refused_before_request(self, host: str, task: FetchItem) -> bool:
        if scheme_of(task.url) not in ("http", "https"):
            self._emit(None, self._row(task, st.NOT_FOUND, "scheme"))
            return True
        rules = self.robots.get(host)
        if rules is None:  # cannot happen: robots.txt is always its host's first task
            self._emit(None, self._row(task, st.RETRY, st.REASON_ROBOTS_UNAVAILABLE))
            return True
        if not rules.allowed(task.url):
            self._emit(None, self._row(task, st.ROBOTS_DENIED, st.REASON_ROBOTS_DENIED))
            return True
        return False

    def _fetch_robots(self, host: str, task: RobotsTask) -> Handler:
        exchange = yield Request(task.url)
        # Not fed to the adaptive delay: robots.txt is often static and fast where pages
        # are not, and would make a slow server look quick.
        pause = self.hosts[host].delay()
        location = exchange.header("Location")
        if exchange.status in _REDIRECTS and location and task.hops < ROBOTS_MAX_HOPS:
            target = resolve(location, task.url)
            if target and scheme_of(target) in ("http", "https"):
                self._emit(exchange, None)
                self.scheduler.add_first(host, replace(task, url=target, hops=task.hops + 1))
                return exchange.ended_monotonic + pause
        status = exchange.status if exchange.error is None else None
        if exchange.error in _HOST_FAILURES:
            self.robots[host] = self._rules(None, b"")
            self._emit(exchange, self._robots_row(task, exchange, None))
            self._drain(host, _HOST_FAILURES[exchange.error], exchange.error)
            return exchange.ended_monotonic + pause
        rules = self._rules(status, exchange.body)
        self.robots[host] = rules
        self._emit(exchange, self._robots_row(task, exchange, status))
        if self._apply_robots(host, rules):
            self._queue_sitemaps(host, task.first_url.removesuffix("/robots.txt"), rules)
        return exchange.ended_monotonic + self.hosts[host].delay()

    def _rules(self, status: int | None, body: bytes) -> RobotsRules:
        return RobotsRules.from_response(
            status, body, self.conf["http.agent.name"], self.conf["robots.content.limit"]
        )

    def _apply_robots(self, host: str, rules: RobotsRules) -> bool:
        """Apply fetched rules to the host; False when they stop it for the round."""
        if rules.unavailable:
            self._drain(host, st.RETRY, st.REASON_ROBOTS_UNAVAILABLE)
            return False
        delay = rules.crawl_delay()
        if delay is not None and delay > self.conf["fetcher.max.crawl.delay"]:
            self._drain(host, st.SKIPPED, st.REASON_CRAWL_DELAY)
            return False
        self.hosts[host].crawl_delay = delay
        return True

    def _queue_sitemaps(self, host: str, origin: str, rules: RobotsRules) -> None:
        """After a host's robots.txt was fetched (so at most once per robots.cache.ttl):
        the sitemaps it names on this host, else /sitemap.xml. Sitemaps on other hosts
        are left out: their host may be another partition's."""
        if self.conf["sitemap.fetch"]:
            named = [url for url in rules.sitemaps if host_of(url) == host]
            for url in named if rules.sitemaps else [f"{origin}/sitemap.xml"]:
                self._add_sitemap(host, url)

    def _add_sitemap(self, host: str, url: str) -> None:
        if url in self.seen or self.sitemaps.get(host, 0) >= self.conf["sitemap.max.files"]:
            return
        self.seen.add(url)
        self.sitemaps[host] = self.sitemaps.get(host, 0) + 1
        self.scheduler.add(host, FetchItem(url, 0, 0.0, origin=ORIGIN_SITEMAP))

    def _follow_sitemap_index(self, host: str, exchange: Exchange) -> None:
        """Queue the sitemaps a fetched sitemap index lists (its own host only)."""
        if exchange.status == 200 and exchange.error is None:
            parsed = parse_sitemap(exchange.url, exchange.body, self.conf["sitemap.content.limit"])
            if parsed.kind == "index":
                for entry in parsed.entries:
                    self._add_sitemap(host, entry.loc)

    def _follow_links(self, host: str, task: FetchItem, exchange: Exchange) -> None:
        """Queue the page's links to its own host that the follower chooses."""
        if exchange.status != 200 or exchange.error is not None:
            return
        headers = {
            "content-type": exchange.header("Content-Type"),
            "x-robots-tag": exchange.header("X-Robots-Tag"),
        }
        links, found = self.follower.links(
            task.url, host, task.depth, task.level, exchange.body, headers
        )
        if not links:
            return
        # The score share parse and updatedb will give the link (all its links count).
        share = outlink_shares(task.score, host, [host] * found, self.conf)[0]
        new = [url for url in links if url not in self.seen]
        self.followed += len(new)
        for url in new:
            self.seen.add(url)
            self.tickets[url] = task.level + 1
            item = FetchItem(
                url, task.depth + 1, share, origin=ORIGIN_OUTLINK, level=task.level + 1
            )
            self.scheduler.add(host, item)

    def _superseded(self, item: FetchItem) -> bool:
        """A followed link fetched meanwhile at a lower level, through a redirect."""
        return item.origin == ORIGIN_OUTLINK and item.url not in self.tickets

    def _drain(self, host: str, outcome: str, reason: str) -> None:
        for item in self.scheduler.take_remaining(host):
            if isinstance(item, FetchItem) and not self._superseded(item):
                self._emit(None, self._row(item, outcome, reason))

    def _result_row(self, host: str, task: FetchItem, exchange: Exchange) -> dict[str, Any]:
        if exchange.error is not None:
            permanent = exchange.error in (st.REASON_INVALID_URL, REASON_PRIVATE)
            outcome = st.NOT_FOUND if permanent else st.RETRY
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
        key = clean(target, self.url_filter, resolved=True)[0] if target else None
        if key is None:
            return None
        within = host_of(key) == host and task.hops < self.conf["http.redirect.max"]
        within = within and key not in self.known_urls
        queued_deeper = within and self.tickets.get(key, -1) > task.level
        if queued_deeper:  # a followed link not fetched yet: fetched now, at this level
            del self.tickets[key]
            self.followed -= 1
        if within and (key not in self.seen or queued_deeper):
            self.seen.add(key)
            if self.follower.enabled and not queued_deeper:
                self.follower.claim(key, host)
            follow = FetchItem(
                key,
                task.depth,
                task.score,
                origin=ORIGIN_REDIRECT,
                hops=task.hops + 1,
                level=task.level,
            )
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
            "attempts": task.attempts + (1 if exchange is not None else 0),
            "truncated": False,
            "fetched_at": int(self.clock() * 1000),  # decision time when nothing was requested
        }
        if exchange is not None:
            row.update(exchange_columns(exchange))
        return row

    def _robots_row(self, task: RobotsTask, exchange: Exchange, status: int | None) -> dict:
        row = self._row(FetchItem(task.first_url, 0, 0.0, origin=ORIGIN_ROBOTS), st.RETRY, None)
        row.update(exchange_columns(exchange))
        row["fetch_status"] = st.outcome_of_http(status) if status else st.RETRY
        row["reason"] = exchange.error or (None if status == 200 else st.http_reason(status))
        return row

    def _emit(self, exchange: Exchange | None, row: dict[str, Any] | None) -> None:
        self._outbox.append((exchange, row))


def _failed(exchange: Exchange) -> bool:
    """A failure that counts against the host (back-off, circuit breaker)."""
    if exchange.error is not None:
        return exchange.error not in (st.REASON_INVALID_URL,)
    return exchange.status == 429 or exchange.status >= 500


def exchange_columns(exchange: Exchange) -> dict[str, Any]:
    """Fetch-table columns that come from an exchange."""
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
        "error_detail": exchange.error_detail,
        "ip": exchange.peer,
    }
