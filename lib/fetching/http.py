"""One HTTP exchange, recorded completely enough for a WARC file and the crawldb.

``HttpClient.get`` never raises for network trouble: the ``Exchange`` it returns carries
either a response (status, headers, body as received and as decoded) or an ``error``
reason (``timeout``, ``connection_error``, ``invalid_url``, ``private_address``,
``dns_error``, ``tls_error``, ``malformed_response``).

It runs on libcurl (pycurl): a GET costs about a third of the client CPU of urllib3,
whose pure-Python response parsing was half of the fetcher's own CPU. Many requests are
on their way at once, all driven by the caller's thread through libcurl's multi
interface (``lib.fetching.curl_loop``): ``start`` a request, ``poll`` for those that ended. With
a thread per request, each libcurl callback (a header line, a body chunk) had to win
Python's interpreter lock back from the others, and these handoffs cost more CPU than
the requests. The multi handle keeps one keep-alive connection per host and never opens
two to a host at once. Host names are resolved by ``lib.fetching.resolver`` (cached, checked
against the address policy; lookups not cached run in a small thread pool so that a
slow DNS server does not stall the other transfers) and curl is pinned to exactly the
addresses it allowed, so a name cannot pass the check with one DNS answer and be
reached at another (no DNS-rebinding gap).

Limits that protect the crawler from a hostile server:

- ``http.timeout`` (ms) for connecting, and for reading: a response that sends nothing
  for that long (rounded up to whole seconds, libcurl's granularity) is dropped;
- ``http.time.limit`` (s) for the whole exchange, so that a server trickling bytes
  forever is cut off (the body so far is kept, marked truncated);
- ``http.content.limit`` (bytes) on the body as received and on the body decoded, so
  that a compression bomb cannot exhaust memory (gzip, deflate, brotli; decoded here,
  not by libcurl, so that the output is bounded);
- redirects are not followed here: the fetcher decides, so that each hop is polite
  and checked.
"""

from __future__ import annotations

import ipaddress
import math
import os
import ssl
import time
import zlib
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, urlsplit

import brotli
import certifi
import pycurl

from lib import vocabulary as st
from lib.exchange import Exchange
from lib.fetching.curl_loop import CurlLoop
from lib.fetching.resolver import AddressRefused, Resolver, refusal
from lib.vocabulary import REASON_DNS, REASON_MALFORMED, REASON_PRIVATE, REASON_TLS

MAX_KEPT_CONNECTIONS = 4096
DEFAULT_PORTS = {"http": 80, "https": 443}
# How often requests waiting for a host name lookup are looked at. Unit: seconds.
LOOKUP_POLL = 0.005
# Longest wait of get() between looks at its request (it returns as soon as it ends). Unit: s.
IDLE_POLL = 1.0
# A gap between two polls longer than this is the caller stalling (a consumer that does
# not take the rows, a collection pause), not the servers being slow: the excess is
# recorded as each request's ``stalled_ms``. Unit: seconds.
STALL_THRESHOLD = 0.05
# libcurl error codes (curl/curl.h) by the reason they are recorded with.
_CURL_REASONS = {
    st.REASON_TIMEOUT: {28},  # OPERATION_TIMEDOUT: connect, read (low speed) or total
    st.REASON_CONNECTION: {7, 16, 52, 55, 56, 92, 95},  # refused, reset, closed, nothing
    st.REASON_INVALID_URL: {3},  # URL_MALFORMAT
    REASON_DNS: {6},
    REASON_TLS: {35, 51, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91, 98},
    # WEIRD_SERVER_REPLY, HTTP/0.9 or an unknown version (UNSUPPORTED_PROTOCOL), a body
    # shorter than its Content-Length (PARTIAL_FILE), a bad chunk (RECV_ERROR is above)
    REASON_MALFORMED: {1, 8, 18, 43, 100},
}
_REASON_OF_CODE = {code: reason for reason, codes in _CURL_REASONS.items() for code in codes}
_WRITE_ERROR = 23  # our body sink stopped the transfer at the content limit


def user_agent(conf: Mapping[str, Any]) -> str:
    """The User-Agent header: ``name/version (+contact URL)``."""
    return f"{conf['http.agent.name']}/{conf['http.agent.version']} (+{conf['http.agent.url']})"


def _ca_paths() -> dict[int, str]:
    """Trusted CAs: the system's (where OpenSSL looks), else certifi's bundle; libcurl's
    own default is where the wheel's builder kept them, not where this machine does."""
    paths = ssl.get_default_verify_paths()
    found = {}
    if paths.cafile and os.path.exists(paths.cafile):
        found[pycurl.CAINFO] = paths.cafile
    if paths.capath and os.path.isdir(paths.capath):
        found[pycurl.CAPATH] = paths.capath
    return found or {pycurl.CAINFO: certifi.where()}


class _Body:
    """The body sink: keeps at most ``limit`` bytes (-1: all), then stops the transfer."""

    __slots__ = ("chunks", "size", "limit", "cut")

    def __init__(self, limit: int):
        self.chunks: list[bytes] = []
        self.size = 0
        self.limit = limit
        self.cut = False

    def write(self, chunk: bytes) -> int | None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        if 0 <= self.limit < self.size:
            self.cut = True
            return 0  # libcurl stops with WRITE_ERROR and closes the connection
        return None

    def take(self) -> bytes:
        """The body received, emptying the sink (libcurl's handle keeps it referenced
        until the host's next request)."""
        body = b"".join(self.chunks)
        self.chunks = []
        return body[: self.limit] if self.cut else body


class _Gate:
    """Called by libcurl right before it sends a request on a connection: lets one
    request go per ``get``, to an allowed address.

    libcurl silently sends a request again on a fresh connection when a reused one dies
    before answering; that second request would follow the first with no pause, so it
    is stopped here (the URL is recorded as a connection error and retried politely).
    The address is checked once more on the connected socket, whatever resolved it."""

    __slots__ = ("allow_private", "sent", "resent", "refused")

    def __init__(self, allow_private: bool):
        self.allow_private = allow_private
        self.sent = self.resent = False
        self.refused: str | None = None

    def __call__(self, peer: str, _local: str, _peer_port: int, _local_port: int) -> int:
        if self.sent:
            self.resent = True
            return pycurl.PREREQFUNC_ABORT
        if not self.allow_private and (kind := refusal(peer)) is not None:
            self.refused = f"connected to {peer} ({kind}); set fetcher.allow.private.networks"
            return pycurl.PREREQFUNC_ABORT
        self.sent = True
        return pycurl.PREREQFUNC_OK


@dataclass
class _Transfer:
    """A request on its way: what libcurl's callbacks fill in, and whom it is for."""

    exchange: Exchange
    tag: Any
    start: float  # monotonic, when the request was given to libcurl
    body: _Body
    gate: _Gate
    head: list[bytes] = field(default_factory=list)
    stalled: float = 0.0  # seconds of the caller's stalls while it was on its way
    host: str = ""
    port: int = 0
    lookup: Future | None = None  # the host name's resolution, when not cached
    cut: bool = False  # ended by the caller (``HttpClient.cut``), not by libcurl


class HttpClient:
    """An HTTP/1.1 client for one fetch partition: many GETs at once, all driven by the
    caller's thread (``start``, then ``poll`` for what ended)."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        hosts: int,
        resolver: Resolver,
        clock: Callable[[], float] = time.time,
    ):
        """``hosts``: how many hosts will be fetched, each keeping one idle connection;
        ``clock``: the wall clock (epoch seconds) that dates each exchange."""
        self.clock = clock
        self.resolver = resolver
        self.allow_private = conf["fetcher.allow.private.networks"]
        self.limit = conf["http.content.limit"]
        self.time_limit = conf["http.time.limit"]
        self.headers = [
            ("User-Agent", user_agent(conf)),
            ("Accept", conf["http.accept"]),
            ("Accept-Language", conf["http.accept.language"]),
            ("Accept-Encoding", "gzip, deflate, br"),
            ("Connection", "keep-alive"),
        ]
        timeout_ms = conf["http.timeout"]
        verify = conf["http.tls.verify"]
        self.options = {
            pycurl.NOSIGNAL: 1,  # no SIGALRM for timeouts (the resolver's threads)
            pycurl.PROXY: "",  # no proxy from the environment
            pycurl.PROTOCOLS: pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS,
            pycurl.HTTP_VERSION: pycurl.CURL_HTTP_VERSION_1_1,
            pycurl.PATH_AS_IS: 1,  # request the URL as recorded, dot segments and all
            pycurl.HTTP_CONTENT_DECODING: 0,  # decoded here, bounded
            pycurl.FOLLOWLOCATION: 0,
            pycurl.TCP_NODELAY: 1,
            pycurl.CONNECTTIMEOUT_MS: timeout_ms,
            pycurl.LOW_SPEED_LIMIT: 1,
            pycurl.LOW_SPEED_TIME: max(1, math.ceil(timeout_ms / 1000)),
            pycurl.TIMEOUT_MS: max(self.time_limit, 0) * 1000,
            pycurl.SSL_VERIFYPEER: 1 if verify else 0,
            pycurl.SSL_VERIFYHOST: 2 if verify else 0,
            **(_ca_paths() if verify else {}),
        }
        # A connection kept per host, so that keep-alive survives the round-robin over
        # hosts; bounded so that a huge partition cannot exhaust file handles.
        self.loop = CurlLoop(max(min(hosts, MAX_KEPT_CONNECTIONS), 1))
        # getaddrinfo blocks: host names are resolved beside the loop, not in it.
        self.lookups = ThreadPoolExecutor(conf["fetcher.threads.fetch"], "resolver")
        self._idle: list[pycurl.Curl] = []  # easy handles not in a transfer
        self._running: dict[pycurl.Curl, _Transfer] = {}
        self._resolving: list[_Transfer] = []
        self._ended: list[tuple[Any, Exchange]] = []
        self._polled = time.monotonic()  # when the last poll returned

    @property
    def pending(self) -> int:
        """Requests started and not yet returned by ``poll``."""
        return len(self._running) + len(self._resolving) + len(self._ended)

    def start(self, url: str, extra_headers: Mapping[str, str] | None = None, tag=None) -> None:
        """Begin a GET of one URL, without following redirects; ``poll`` returns its
        ``Exchange`` with ``tag``. Never raises: a failure is the exchange's ``error``."""
        parts = urlsplit(url)
        sent = [("Host", parts.netloc), *self.headers, *(extra_headers or {}).items()]
        exchange = Exchange(url, sent, self.clock())
        transfer = _Transfer(
            exchange, tag, time.monotonic(), _Body(self.limit), _Gate(self.allow_private)
        )
        try:
            host, port = transfer.host, transfer.port = _host_port(parts)
            allowed = self.resolver.cached(host, port)
            if allowed is None and not _is_ip(host):
                transfer.lookup = self.lookups.submit(self.resolver.addresses, host, port)
                self._resolving.append(transfer)
                return
            self._launch(transfer, allowed or self.resolver.addresses(host, port))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded reason
            self._end(transfer, exc)

    def poll(self, timeout: float) -> list[tuple[Any, Exchange]]:
        """Let requests progress for up to ``timeout`` seconds, returning as soon as some
        ended: ``(tag, exchange)`` pairs."""
        self._note_stall()
        self._launch_resolved()
        if not self._ended:
            if self._resolving:
                timeout = min(timeout, LOOKUP_POLL)
            for curl, failure in self.loop.wait(timeout):
                self._finish(self._running.pop(curl), curl, failure)
                self._idle.append(curl)
        ended, self._ended = self._ended, []
        self._polled = time.monotonic()
        return ended

    def cut(self, started_before: float, why: str) -> None:
        """End the requests on their way that started (``time.monotonic``) before
        ``started_before``, as ``http.time.limit`` does: an answer under way is kept as
        far as it came, marked truncated (``error_detail`` names ``why``); one not
        answered yet is a timeout. ``poll`` returns them."""
        for curl, transfer in list(self._running.items()):
            if transfer.start < started_before:
                self.loop.remove(curl)
                del self._running[curl]
                transfer.cut = True
                self._finish(transfer, curl, pycurl.error(28, why))
                curl.close()

    def _note_stall(self) -> None:
        """Charge a long gap since the last poll to the requests it held up."""
        now = time.monotonic()
        excess = now - self._polled - STALL_THRESHOLD
        if excess > 0:
            for transfer in self._running.values():
                transfer.stalled += min(excess, now - transfer.start)

    def get(self, url: str, extra_headers: Mapping[str, str] | None = None) -> Exchange:
        """GET one URL and wait for it (for a caller with one request at a time)."""
        if self.pending:
            raise RuntimeError("HttpClient.get while requests started with start() are pending")
        self.start(url, extra_headers)
        while not (ended := self.poll(IDLE_POLL)):
            pass
        return ended[0][1]

    def _launch(self, transfer: _Transfer, allowed: list[tuple]) -> None:
        """Pin curl to the addresses the resolver allowed and start the transfer."""
        curl = self._idle.pop() if self._idle else self._new_handle()
        try:
            name = f"{_curl_address(transfer.host)}:{transfer.port}"
            addresses = ",".join(_curl_address(a[4][0]) for a in allowed)
            curl.setopt(pycurl.RESOLVE, [f"-{name}", f"{name}:{addresses}"])
            curl.setopt(pycurl.URL, transfer.exchange.url)
            headers = transfer.exchange.request_headers[1:]  # libcurl writes Host itself
            curl.setopt(pycurl.HTTPHEADER, [f"{k}: {v}".encode("latin-1") for k, v in headers])
        except Exception:
            self._idle.append(curl)
            raise
        curl.setopt(pycurl.HEADERFUNCTION, transfer.head.append)
        curl.setopt(pycurl.WRITEFUNCTION, transfer.body.write)
        curl.setopt(pycurl.PREREQFUNCTION, transfer.gate)
        transfer.start = time.monotonic()
        self._running[curl] = transfer
        self.loop.add(curl)

    def _new_handle(self) -> pycurl.Curl:
        curl = pycurl.Curl()
        for option, value in self.options.items():
            curl.setopt(option, value)
        return curl

    def _launch_resolved(self) -> None:
        waiting = []
        for transfer in self._resolving:
            if not transfer.lookup.done():
                waiting.append(transfer)
                continue
            try:
                self._launch(transfer, transfer.lookup.result())
            except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded reason
                self._end(transfer, exc)
        self._resolving = waiting

    def _end(self, transfer: _Transfer, exc: Exception) -> None:
        """A request that failed before libcurl had it."""
        exchange = transfer.exchange
        if isinstance(exc, AddressRefused):
            exchange.error, exchange.error_detail = exc.reason, str(exc)[:500]
        elif isinstance(exc, ValueError):  # a bad port, a non-ASCII URL or header
            exchange.error = st.REASON_INVALID_URL
            exchange.error_detail = f"{type(exc).__name__}: {exc}"[:500]
        else:
            exchange.error = st.REASON_EXCEPTION
            exchange.error_detail = f"{type(exc).__name__}: {exc}"[:500]
        self._ended.append((transfer.tag, _timed(exchange, transfer.start)))

    def _finish(self, transfer: _Transfer, curl: pycurl.Curl, failure: pycurl.error | None):
        exchange, body, gate = transfer.exchange, transfer.body, transfer.gate
        raw = body.take()
        status_line, exchange.response_headers = parse_head(transfer.head)
        transfer.head.clear()
        if status_line is not None:
            exchange.status = curl.getinfo(pycurl.RESPONSE_CODE) or None
            exchange.reason_phrase = _reason_phrase(status_line)
            exchange.peer = curl.getinfo(pycurl.PRIMARY_IP) or None
            exchange.first_byte_ms = int(curl.getinfo(pycurl.STARTTRANSFER_TIME) * 1000)
        if gate.refused is not None:
            exchange.error, exchange.error_detail = REASON_PRIVATE, gate.refused
        elif gate.resent:
            exchange.error = st.REASON_CONNECTION
            exchange.error_detail = "connection closed before an answer (not sent again)"
        elif failure is not None:
            self._failed(exchange, failure, body, transfer)
        exchange.stalled_ms = int(transfer.stalled * 1000)
        if exchange.status is not None:
            encoding = (exchange.header("Content-Encoding") or "identity").strip().lower()
            exchange.raw_body = raw
            exchange.body, bomb = decode_body(raw, encoding, self.limit)
            exchange.cut_at_size = body.cut or bomb
            exchange.truncated = exchange.truncated or exchange.cut_at_size
        self._ended.append((transfer.tag, _timed(exchange, transfer.start)))

    def _failed(self, exchange: Exchange, failure: pycurl.error, body: _Body, transfer):
        code, message = failure.args
        if code == _WRITE_ERROR and body.cut:
            return  # cut at the content limit: a truncated page, not an error
        cut_in_time = (
            code == 28
            and exchange.status is not None
            and self.time_limit >= 0
            and time.monotonic() - transfer.start >= self.time_limit
        )
        if cut_in_time or (transfer.cut and exchange.status is not None):
            exchange.truncated = True
            exchange.error_detail = f"body cut at {message if transfer.cut else 'http.time.limit'}"
            return
        exchange.error = _REASON_OF_CODE.get(code, st.REASON_EXCEPTION)
        exchange.error_detail = f"curl error {code}: {message}"[:500]

    def close(self) -> None:
        """Close pooled connections; requests still pending are dropped."""
        self.lookups.shutdown(wait=False, cancel_futures=True)
        for curl in [*self._running, *self._idle]:
            curl.close()
        self._running.clear()
        self._idle.clear()
        self.loop.close()


def _timed(exchange: Exchange, start: float) -> Exchange:
    exchange.ended_monotonic = time.monotonic()
    exchange.duration_ms = int((exchange.ended_monotonic - start) * 1000)
    return exchange


def _host_port(parts: SplitResult) -> tuple[str, int]:
    """Host and port of a URL (``ValueError`` for a bad port)."""
    return parts.hostname or "", parts.port or DEFAULT_PORTS.get(parts.scheme, 80)


def _is_ip(host: str) -> bool:
    """An IP literal: resolved without a lookup, so at once."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def parse_head(lines: list[bytes]) -> tuple[str | None, list[tuple[str, str]]]:
    """The status line and header fields of the last response head in ``lines`` (as
    libcurl hands them over: interim 1xx heads come first). Lines without a colon are
    dropped; a folded line (obs-fold) continues the field before it."""
    status_line, headers = None, []
    for raw in lines:
        line = raw.decode("latin-1").rstrip("\r\n")
        if line.startswith("HTTP/"):
            status_line, headers = line, []
        elif line[:1] in (" ", "\t") and headers:
            name, value = headers[-1]
            headers[-1] = (name, f"{value} {line.strip()}")
        else:
            name, colon, value = line.partition(":")
            if colon and name and name == name.strip():
                headers.append((name, value.strip(" \t")))
    return status_line, headers


def _reason_phrase(status_line: str) -> str:
    parts = status_line.split(" ", 2)
    return parts[2].strip() if len(parts) > 2 else ""


def _curl_address(address: str) -> str:
    """An address as libcurl's RESOLVE and CONNECT_TO entries write it (IPv6 bracketed)."""
    return f"[{address}]" if ":" in address else address


def decode_body(raw: bytes, encoding: str, limit: int) -> tuple[bytes, bool]:
    """Undo Content-Encoding with the output capped at ``limit`` bytes (compression bombs).

    Returns the decoded body and whether it was cut at the limit. An unknown or broken
    encoding leaves the body as received.
    """
    cap = limit if limit >= 0 else 0
    try:
        if encoding in ("gzip", "x-gzip"):
            return _inflate(raw, (16 + zlib.MAX_WBITS,), cap)
        if encoding == "deflate":
            return _inflate(raw, (zlib.MAX_WBITS, -zlib.MAX_WBITS), cap)  # IIS sends raw deflate
        if encoding == "br":
            decoder = brotli.Decompressor()
            body = decoder.process(raw, output_buffer_limit=cap) if cap else decoder.process(raw)
            return body[:cap] if cap else body, bool(cap) and len(body) >= cap
    except (zlib.error, brotli.error):
        return raw, False
    return raw, False


def _inflate(raw: bytes, wbits_options: tuple[int, ...], cap: int) -> tuple[bytes, bool]:
    for wbits in wbits_options:
        decoder = zlib.decompressobj(wbits)
        try:
            body = decoder.decompress(raw, cap)
        except zlib.error:
            continue
        return body, bool(decoder.unconsumed_tail)
    raise zlib.error("not a valid stream")
