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

``PartitionFetcher`` coordinates; its parts each have one job: ``RobotsKeeper``
(robots.txt), ``SitemapQueue`` (sitemaps), ``RoundUrls`` (URLs seen, links followed,
redirects taken), ``TailWatch`` (the round's tail), ``rows`` (the result rows).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from lib import vocabulary as st
from lib.archive.warc import WarcFile
from lib.exchange import Exchange, PriorCapture
from lib.fetching.agent import unnamed_keys
from lib.fetching.hoststate import HostState, now_utc, parse_retry_after
from lib.fetching.http import HttpClient
from lib.fetching.politeness import DONE, PoliteScheduler, Wait
from lib.fetching.resolver import Resolver
from lib.fetching.robots_keeper import HOST_FAILURES, RobotsKeeper
from lib.fetching.round_urls import RoundUrls
from lib.fetching.rows import answered_row, failed, fetch_row
from lib.fetching.sitemap_queue import SitemapQueue
from lib.fetching.tail_watch import TailWatch
from lib.fetching.tasks import CachedRobots, FetchItem, Handler, Request, RobotsTask
from lib.fetching.warc_metadata import metadata_fields
from lib.url.filter import UrlFilter
from lib.url.normalize import scheme_of
from lib.vocabulary import (
    ORIGIN_FETCHLIST,
    ORIGIN_OUTLINK,
    ORIGIN_PROBE,
    ORIGIN_REDIRECT,
    ORIGIN_SITEMAP,
    REASON_CIRCUIT,
    REASON_TIME_LIMIT,
)

_FOLLOWED_FROM = (ORIGIN_FETCHLIST, ORIGIN_REDIRECT, ORIGIN_OUTLINK)
# What waits to be archived: an exchange, its URL's row, the capture it may revisit.
Outgoing = tuple[Exchange | None, dict[str, Any] | None, PriorCapture | None]
# Longest wait for the network when no host is due: a bound, not a poll the rules rely
# on (a request ending wakes the loop at once). Unit: seconds.
IDLE_WAIT = 1.0


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
        not_before: Mapping[str, float] | None = None,
    ):
        """``probed_hosts``: hosts whose soft-404 probe answer is still cached (not asked);
        ``known_urls``: URLs of the partition's hosts fetched in earlier rounds, which a
        redirect does not fetch again in this one (the crawldb has them, due when due);
        ``clock``: the wall clock (epoch seconds) of the rows' and exchanges' times;
        ``not_before``: host -> the moment (epoch seconds, ``clock``'s) before which it
        must not be asked, its pause after the last round's last request to it."""
        self.conf = conf
        self.clock = clock
        self.warc = warc
        self.probed_hosts = probed_hosts
        self.not_before = not_before or {}
        self.attempt = attempt
        self.threads = conf["fetcher.threads.fetch"]
        self.resolver = Resolver(
            conf["fetcher.dns.ttl"],
            conf["fetcher.allow.private.networks"],
            loopback_only=bool(unnamed_keys(conf)),
        )
        self.client: HttpClient | None = None
        self.scheduler = PoliteScheduler()
        self.hosts: dict[str, HostState] = {}
        self.urls = RoundUrls(conf, UrlFilter(conf), known_urls)
        sitemaps = SitemapQueue(conf, self.scheduler, self.urls.seen)
        sink = (self._emit, self._drain, clock)
        self.robots = RobotsKeeper(
            conf, robots_cache or {}, self.scheduler, self.hosts, sitemaps, sink
        )
        self.sitemaps = sitemaps
        self.tail = TailWatch(conf, self.hosts)
        # Rows and exchanges to write, emptied after each look at the network: so few
        # pages wait in memory that the WARC file's writing needs no bound of its own.
        self._outbox: list[Outgoing] = []
        self.deferred = 0  # URLs deferred to the next round
        minutes = conf["fetcher.timelimit.mins"]
        self.deadline = time.monotonic() + minutes * 60 if minutes >= 0 else None

    @property
    def followed(self) -> int:
        """Links queued by in-round following."""
        return self.urls.followed

    @property
    def eta_at(self) -> float | None:
        """Epoch seconds of the round's last request, as last projected."""
        return self.tail.eta_at

    @property
    def holding(self) -> list[str]:
        """Hosts holding the round, at the last look at its tail."""
        return self.tail.holding

    def run(self, rows: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
        """Fetch every row (``url``, ``host``, ``depth``, ``score``); yield result rows."""
        self._enqueue(rows)
        self.client = HttpClient(self.conf, len(self.hosts), self.resolver, self.clock)
        try:
            yield from self._drive()
        finally:
            self.client.close()
        for _host, task in self.scheduler.take_all():
            if isinstance(task, FetchItem) and not self.urls.superseded(task):
                yield self._row(task, st.SKIPPED, REASON_TIME_LIMIT)

    def _drive(self) -> Iterator[dict[str, Any]]:
        """Start what may start, wait for answers, hand each to its task; until no host
        has anything left (or the round's time is up and nothing is on its way)."""
        while True:
            wait = self._start_ready()
            if self.tail.due(time.monotonic()):
                self._look_at_tail()
            yield from self._written()
            if wait is None and not self.client.pending:
                return
            timeout = self.tail.wait(IDLE_WAIT if wait is None else wait, time.monotonic())
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
            self.tail.answered(host)
        try:
            request = handler.send(exchange)
        except StopIteration as end:
            self.scheduler.release(host, end.value)
            return
        self.tail.started(host, time.monotonic())
        self.client.start(request.url, request.headers, tag=(host, handler))

    def _look_at_tail(self) -> None:
        """Defer the URLs of hosts that would hold the round (``lib.fetching.roundtail``)."""
        now = time.monotonic()
        plan, outlooks = self.tail.look(self.scheduler.waiting(), now, self.clock())
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

    def _defer(self, item: RobotsTask | FetchItem) -> None:
        if isinstance(item, FetchItem) and not self.urls.superseded(item):
            if item.origin in _FOLLOWED_FROM:
                self.deferred += 1
            self.urls.handled(item)
            self._emit(None, self._row(item, st.SKIPPED, st.REASON_DEFERRED))

    def _written(self) -> Iterator[dict[str, Any]]:
        """Write the exchanges waiting in the outbox; yield their rows."""
        outbox, self._outbox = self._outbox, []
        for exchange, row, prior in outbox:
            if exchange is not None and exchange.status is not None and self.warc is not None:
                written = self.warc.write_exchange(exchange, prior)
                if row is not None:
                    row["warc_offset"] = written.offset
                    row["warc_file"] = self.warc.name
                    row["warc_record_id"] = written.record_id
                    row["payload_digest"] = written.payload_digest
                    if self.conf["warc.metadata.records"]:
                        fields = metadata_fields(row, exchange, self.conf, self.urls.url_filter)
                        self.warc.write_metadata(row["url"], written, fields)
            if row is not None:
                yield row

    def _enqueue(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            url, host = row["url"], row["host"]
            if not self.urls.listed(url, host):
                continue
            if host not in self.hosts:
                self._open_host(host, url)
            item = FetchItem(
                url,
                row["depth"],
                row["score"],
                etag=row.get("etag"),
                last_modified=row.get("last_modified"),
                prior=self._prior(row),
            )
            self.scheduler.add(host, item)
        start, wall = time.monotonic(), self.clock()
        for host, state in self.hosts.items():
            if self.attempt > 0:
                self.scheduler.not_before(host, start + state.delay())
            if host in self.not_before:
                self.scheduler.not_before(host, start + self.not_before[host] - wall)

    def _prior(self, row: Mapping[str, Any]) -> PriorCapture | None:
        """The URL's archived capture (None when the work row has none: never archived,
        or its WARC files removed), which a revisit names."""
        digest, date_ms = row.get("payload_digest"), row.get("capture_time")
        record_id = row.get("capture_record_id")
        if digest is None or date_ms is None or record_id is None:
            return None
        return PriorCapture(digest, date_ms, record_id, self.conf["warc.revisit.identical"])

    def _open_host(self, host: str, url: str) -> None:
        """A host's first URL: its state, its robots.txt, its soft-404 probe."""
        self.hosts[host] = HostState(self.conf)
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        self.robots.open_host(host, origin)
        # A path that cannot exist: a host answering it with 200 shows its soft-404
        # page, which updatedb then recognises among the host's pages.
        if self.conf["fetcher.soft404.probe"] and host not in self.probed_hosts:
            probe = f"{origin}/trawl-probe-{secrets.token_hex(8)}"
            self.scheduler.add(host, FetchItem(probe, 0, 0.0, origin=ORIGIN_PROBE))

    def _handle(self, host: str, task: RobotsTask | FetchItem) -> Handler:
        """Process one task of a held host (see ``Handler``)."""
        if isinstance(task, RobotsTask):
            return (yield from self.robots.fetch(host, task))
        if self.urls.superseded(task):
            return None
        self.urls.handled(task)
        if self._refused_before_request(host, task):
            return None
        exchange = yield Request(task.url, task.conditional_headers())
        verdict = self.hosts[host].after(
            exchange.server_seconds,  # the crawler's own stalls are not the host's
            exchange.status,
            failed=failed(exchange) and task.origin != ORIGIN_PROBE,
            retry_after=parse_retry_after(exchange.header("Retry-After"), now_utc()),
        )
        if verdict.retry_url and task.attempts < self.conf["fetcher.max.retries.in.round"]:
            self._emit(exchange, None)  # the exchange is archived; the URL tries again
            self.urls.retried(task)
            self.scheduler.add_first(host, replace(task, attempts=task.attempts + 1))
        else:
            self._answered(host, task, exchange)
        if exchange.error in HOST_FAILURES:
            self._drain(host, HOST_FAILURES[exchange.error], exchange.error)
        elif verdict.open_circuit:
            self._drain(host, st.SKIPPED, REASON_CIRCUIT)
        # A response cut at a limit was still being sent when the client hung up; the
        # server's request ends when it notices, which the client cannot see (a loaded
        # server logged it after the client's cut): the host's own delay counts twice.
        pause = verdict.pause
        if exchange.truncated:
            pause += self.hosts[host].polite_delay()
        return exchange.ended_monotonic + pause

    def _answered(self, host: str, task: FetchItem, exchange: Exchange) -> None:
        """The URL's row, its redirect taken, the sitemaps or links it leads to queued."""
        row = answered_row(task, exchange, self.clock())
        if row["fetch_status"] in (st.MOVED, st.TEMP_MOVED):
            row["redirect_to"], follow = self.urls.redirect(host, task, exchange)
            if follow is not None:
                self.scheduler.add_first(host, follow)
        self._emit(exchange, row, task.prior)
        if task.origin == ORIGIN_SITEMAP:
            self.sitemaps.follow_index(host, exchange)
        elif task.origin in _FOLLOWED_FROM and self.urls.follower.enabled:
            for item in self.urls.links(host, task, exchange):
                self.scheduler.add(host, item)

    def _refused_before_request(self, host: str, task: FetchItem) -> bool:
        if scheme_of(task.url) not in ("http", "https"):
            self._emit(None, self._row(task, st.NOT_FOUND, "scheme"))
            return True
        rules = self.robots.rules.get(host)
        if rules is None:  # cannot happen: robots.txt is always its host's first task
            self._emit(None, self._row(task, st.RETRY, st.REASON_ROBOTS_UNAVAILABLE))
            return True
        if not rules.allowed(task.url):
            self._emit(None, self._row(task, st.ROBOTS_DENIED, st.REASON_ROBOTS_DENIED))
            return True
        return False

    def _drain(self, host: str, outcome: str, reason: str) -> None:
        for item in self.scheduler.take_remaining(host):
            if isinstance(item, FetchItem) and not self.urls.superseded(item):
                self._emit(None, self._row(item, outcome, reason))

    def _row(self, task: FetchItem, outcome: str, reason: str | None) -> dict[str, Any]:
        """The row of a URL given up without a request, dated now."""
        return fetch_row(task, outcome, reason, self.clock())

    def _emit(
        self,
        exchange: Exchange | None,
        row: dict[str, Any] | None,
        prior: PriorCapture | None = None,
    ) -> None:
        self._outbox.append((exchange, row, prior))
