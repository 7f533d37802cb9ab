"""One HTTP exchange, recorded completely enough for a WARC file and the crawldb.

``HttpClient.get`` never raises for network trouble: the ``Exchange`` it returns carries
either a response (status, headers, body as received and as decoded) or an ``error``
reason (``timeout``, ``connection_error``, ``invalid_url``, ``exception``). Bodies are read
up to ``http.content.limit`` bytes; the rest is not downloaded (``truncated``).
Redirects are not followed here: the fetcher decides, so that each hop is polite.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import HTTPError as Urllib3HTTPError

from crawldb import status as st

READ_CHUNK = 65536


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
    truncated: bool = False
    error: str | None = None
    error_detail: str | None = None

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


class HttpClient:
    """A pooled HTTP/1.1 client for one fetch partition."""

    def __init__(self, conf: Mapping[str, Any], pool_size: int):
        self.timeout = conf["http.timeout"] / 1000.0
        self.limit = conf["http.content.limit"]
        self.session = requests.Session()
        adapter = HTTPAdapter(pool_connections=pool_size, pool_maxsize=1, max_retries=0)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.session.headers.clear()
        self.session.headers.update(
            {
                "User-Agent": user_agent(conf),
                "Accept": conf["http.accept"],
                "Accept-Language": conf["http.accept.language"],
                "Accept-Encoding": "gzip, deflate",
            }
        )

    def get(self, url: str, extra_headers: Mapping[str, str] | None = None) -> Exchange:
        """GET one URL without following redirects."""
        try:
            request = self.session.prepare_request(
                requests.Request("GET", url, headers=dict(extra_headers or {}))
            )
        except (requests.exceptions.RequestException, ValueError) as exc:
            return _failed(url, [], time.time(), st.REASON_INVALID_URL, exc)
        sent = _sent_headers(request)
        started, start_mono = time.time(), time.monotonic()
        try:
            with self.session.send(
                request, stream=True, timeout=self.timeout, allow_redirects=False
            ) as response:
                exchange = self._read(url, sent, started, response)
        except requests.exceptions.Timeout as exc:
            exchange = _failed(url, sent, started, st.REASON_TIMEOUT, exc)
        except (requests.exceptions.RequestException, Urllib3HTTPError, OSError) as exc:
            exchange = _failed(url, sent, started, st.REASON_CONNECTION, exc)
        exchange.ended_monotonic = time.monotonic()
        exchange.duration_ms = int((exchange.ended_monotonic - start_mono) * 1000)
        return exchange

    def _read(self, url, sent, started, response: requests.Response) -> Exchange:
        raw, truncated = read_limited(response.raw, self.limit)
        encoding = (response.headers.get("Content-Encoding") or "identity").strip().lower()
        return Exchange(
            url=url,
            request_headers=sent,
            started=started,
            status=response.status_code,
            reason_phrase=response.reason or "",
            response_headers=list(response.raw.headers.items()),
            raw_body=raw,
            body=decode_body(raw, encoding, self.limit),
            truncated=truncated,
        )

    def close(self) -> None:
        """Close pooled connections."""
        self.session.close()


def read_limited(raw, limit: int) -> tuple[bytes, bool]:
    """Read the undecoded body up to ``limit`` bytes (-1: all); True if more was left."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = raw.read(READ_CHUNK, decode_content=False)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
        if 0 <= limit < size:
            return b"".join(chunks)[:limit], True


def decode_body(raw: bytes, encoding: str, limit: int) -> bytes:
    """Undo gzip or deflate Content-Encoding, output capped at ``limit`` (gzip bombs)."""
    if encoding in ("gzip", "x-gzip"):
        wbits_options = (16 + zlib.MAX_WBITS,)
    elif encoding == "deflate":
        wbits_options = (zlib.MAX_WBITS, -zlib.MAX_WBITS)  # zlib-wrapped, or raw as IIS sends
    else:
        return raw
    cap = limit if limit >= 0 else 0  # 0 means no cap for decompressobj
    for wbits in wbits_options:
        try:
            return zlib.decompressobj(wbits).decompress(raw, cap)
        except zlib.error:
            continue
    return raw


def _sent_headers(request: requests.PreparedRequest) -> list[tuple[str, str]]:
    # http.client adds Host itself; record it so the WARC request record is complete.
    host = requests.utils.urlparse(request.url).netloc
    return [("Host", host), *request.headers.items()]


def _failed(url, sent, started, reason: str, exc: BaseException) -> Exchange:
    return Exchange(url, sent, started, error=reason, error_detail=f"{type(exc).__name__}: {exc}")
