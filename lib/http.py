"""One HTTP exchange, recorded completely enough for a WARC file and the crawldb.

``HttpClient.get`` never raises for network trouble: the ``Exchange`` it returns carries
either a response (status, headers, body as received and as decoded) or an ``error``
reason (``timeout``, ``connection_error``, ``invalid_url``, ``private_address``,
``dns_error``, ``tls_error``, ``malformed_response``). It uses urllib3 directly (about a
third of the client CPU of requests) with one pooled keep-alive connection per host.

Limits that protect the crawler from a hostile server:

- ``http.timeout`` (ms) for connecting and for each read, and ``http.time.limit``
  (s) for the whole body, so that a server trickling bytes forever is cut off;
- ``http.content.limit`` (bytes) on the body as received and on the body decoded, so
  that a compression bomb cannot exhaust memory (gzip, deflate, brotli);
- redirects are not followed here: the fetcher decides, so that each hop is polite
  and checked.
"""

from __future__ import annotations

import http.client
import socket
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import brotli
import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    LocationParseError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)

from crawldb import status as st
from lib.resolver import AddressRefused, Resolver

READ_CHUNK = 65536
MAX_KEPT_CONNECTIONS = 4096
REASON_TLS = "tls_error"
REASON_MALFORMED = "malformed_response"
REASON_TIME_LIMIT = "time_limit"


@dataclass
class Exchange:
    """A request and what came back for it."""

    url: str
    request_headers: list[tuple[str, str]]
    started: float  # epoch seconds, wall clock
    ended_monotonic: float = 0.0
    duration_ms: int = 0
    status: int | None = None
    reason_phrase: str = ""
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    raw_body: bytes = b""  # as received (still content-encoded)
    body: bytes = b""  # Content-Encoding undone
    truncated: bool = False  # the body was cut at a size or time limit
    error: str | None = None
    error_detail: str | None = None
    peer: str | None = None  # IP address connected to

    def header(self, name: str) -> str | None:
        """First response header of that name (case-insensitive), or ``None``."""
        lowered = name.lower()
        for key, value in self.response_headers:
            if key.lower() == lowered:
                return value
        return None


def user_agent(conf: Mapping[str, Any]) -> str:
    """The User-Agent header: ``name/version (+contact URL)``."""
    return f"{conf['http.agent.name']}/{conf['http.agent.version']} (+{conf['http.agent.url']})"


def _guarded(base: type, resolver: Resolver) -> type:
    """A connection class that connects only to addresses the resolver allowed."""

    class GuardedConnection(base):
        def _new_conn(self) -> socket.socket:
            last: OSError | None = None
            for family, kind, proto, _, sockaddr in resolver.addresses(self._dns_host, self.port):
                sock = socket.socket(family, kind, proto)
                try:
                    sock.settimeout(self.timeout)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    sock.connect(sockaddr)
                    self.trawl_peer = sockaddr[0]  # the WARC-IP-Address of its responses
                    return sock
                except TimeoutError as exc:
                    sock.close()
                    raise ConnectTimeoutError(self, f"connect to {sockaddr[0]} timed out") from exc
                except OSError as exc:
                    sock.close()
                    last = exc
            raise NewConnectionError(self, f"cannot connect to {self.host}: {last}")

    return GuardedConnection


def guarded_pool_manager(
    resolver: Resolver, num_pools: int, timeout: float, verify: bool
) -> urllib3.PoolManager:
    """A urllib3 pool manager, one keep-alive connection per host, that connects only to
    the addresses ``resolver`` allows: the address is checked when the socket connects,
    so a name that resolves elsewhere between a check and the request (DNS rebinding)
    is refused. Nothing is retried or redirected: the caller decides."""
    pool = urllib3.PoolManager(
        num_pools=num_pools,
        maxsize=1,  # one connection per host
        block=False,
        retries=False,
        timeout=urllib3.Timeout(connect=timeout, read=timeout),
        cert_reqs="CERT_REQUIRED" if verify else "CERT_NONE",
    )
    http_pool = type("GuardedHTTPPool", (HTTPConnectionPool,), {})
    http_pool.ConnectionCls = _guarded(HTTPConnection, resolver)
    https_pool = type("GuardedHTTPSPool", (HTTPSConnectionPool,), {})
    https_pool.ConnectionCls = _guarded(HTTPSConnection, resolver)
    pool.pool_classes_by_scheme = {"http": http_pool, "https": https_pool}
    return pool


class HttpClient:
    """A pooled HTTP/1.1 client for one fetch partition."""

    def __init__(self, conf: Mapping[str, Any], hosts: int, resolver: Resolver):
        """``hosts``: how many hosts will be fetched, each keeping one idle connection."""
        timeout = conf["http.timeout"] / 1000.0
        self.time_limit = conf["http.time.limit"]
        self.limit = conf["http.content.limit"]
        self.headers = {
            "User-Agent": user_agent(conf),
            "Accept": conf["http.accept"],
            "Accept-Language": conf["http.accept.language"],
            "Accept-Encoding": "gzip, deflate, br",
            "Connection": "keep-alive",
        }
        self.pool = guarded_pool_manager(
            resolver,
            # One pool per host so that keep-alive connections survive the round-robin
            # over hosts; bounded so that a huge partition cannot exhaust file handles.
            num_pools=max(min(hosts, MAX_KEPT_CONNECTIONS), 1),
            timeout=timeout,
            verify=conf["http.tls.verify"],
        )

    def get(self, url: str, extra_headers: Mapping[str, str] | None = None) -> Exchange:
        """GET one URL without following redirects."""
        sent = [("Host", urlsplit(url).netloc), *self.headers.items()]
        sent += list((extra_headers or {}).items())
        exchange = Exchange(url, sent, time.time())
        start = time.monotonic()
        try:
            response = self.pool.urlopen(
                "GET",
                url,
                headers=dict(sent),
                redirect=False,
                preload_content=False,
                decode_content=False,
            )
            self._read(exchange, response, start)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded reason
            exchange.error, exchange.error_detail = classify_error(exc)
        exchange.ended_monotonic = time.monotonic()
        exchange.duration_ms = int((exchange.ended_monotonic - start) * 1000)
        return exchange

    def _read(self, exchange: Exchange, response, start: float) -> None:
        exchange.status = response.status
        exchange.reason_phrase = response.reason or ""
        exchange.response_headers = list(response.headers.items())
        exchange.peer = _peer(response)
        deadline = start + self.time_limit if self.time_limit >= 0 else None
        raw, cut = read_limited(response, self.limit, deadline)
        if cut:
            response.close()  # the rest of the body is unread: the connection cannot be reused
        else:
            response.release_conn()
        encoding = (response.headers.get("Content-Encoding") or "identity").strip().lower()
        exchange.raw_body = raw
        exchange.body, bomb = decode_body(raw, encoding, self.limit)
        exchange.truncated = cut is not None or bomb
        if cut == REASON_TIME_LIMIT:
            exchange.error_detail = "body cut at http.time.limit"

    def close(self) -> None:
        """Close pooled connections."""
        self.pool.clear()


def read_limited(response, limit: int, deadline: float | None) -> tuple[bytes, str | None]:
    """Read the undecoded body up to ``limit`` bytes (-1: all) and until ``deadline``.

    Returns the bytes and why reading stopped early (``content_limit``, ``time_limit``),
    or ``None`` when the whole body was read.
    """
    chunks: list[bytes] = []
    size = 0
    while True:
        if deadline is not None and time.monotonic() > deadline:
            return b"".join(chunks), REASON_TIME_LIMIT
        chunk = response.read1(READ_CHUNK, decode_content=False)
        if not chunk:
            return b"".join(chunks), None
        chunks.append(chunk)
        size += len(chunk)
        if 0 <= limit < size:
            return b"".join(chunks)[:limit], "content_limit"


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


def classify_error(exc: BaseException) -> tuple[str, str]:
    """``(reason, detail)`` for an exception raised while fetching."""
    detail = f"{type(exc).__name__}: {exc}"[:500]
    if isinstance(exc, AddressRefused):
        return exc.reason, detail
    if isinstance(exc, ConnectTimeoutError | ReadTimeoutError | TimeoutError):
        return st.REASON_TIMEOUT, detail
    if isinstance(exc, SSLError):
        return REASON_TLS, detail
    if isinstance(exc, LocationParseError | ValueError):
        return st.REASON_INVALID_URL, detail
    inner = exc.args[1] if isinstance(exc, ProtocolError) and len(exc.args) > 1 else exc
    if isinstance(inner, ConnectionError):  # reset, or closed before answering
        return st.REASON_CONNECTION, detail
    if isinstance(inner, http.client.HTTPException):
        return REASON_MALFORMED, detail
    if isinstance(exc, HTTPError | OSError):
        return st.REASON_CONNECTION, detail
    return st.REASON_EXCEPTION, detail


def _peer(response) -> str | None:
    """The address the response came from, as the connection recorded it when it connected."""
    return getattr(response.connection, "trawl_peer", None)
