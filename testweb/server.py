"""The local test web: one HTTP/1.1 server per host, each on its own loopback address.

Every request is appended to a request log (JSON lines: ``host``, ``path``, ``ua``,
``status``, ``start`` and ``end`` as epoch seconds, ``client`` port) that tests read to
prove what the crawler did on the wire. All hosts are served by one asyncio event loop
(asyncio sets TCP_NODELAY on its sockets; without it an answer takes about 44 ms).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
import time
from email.utils import formatdate, parsedate_to_datetime
from http.client import responses
from pathlib import Path

from testweb.site import STREAM_CHUNK, STREAM_PAUSE_S, TRICKLE_BYTE_S, Response, Site


class RequestLog:
    """Thread-safe JSON-lines log of requests."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, entry: dict) -> None:
        """Append one entry and flush it, so readers in other processes see it at once."""
        line = json.dumps(entry, sort_keys=True)
        with self._lock:
            self._handle.write(line + "\n")
            self._handle.flush()

    def close(self) -> None:
        """Close the file."""
        self._handle.close()


def read_log(path: Path) -> list[dict]:
    """All entries of a request log."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


class _Request:
    """A parsed request head: method, path, version and headers (names in lower case)."""

    def __init__(self, head: bytes):
        lines = head.decode("latin-1").split("\r\n")
        self.method, self.path, self.version = lines[0].split(" ", 2)
        self.headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                self.headers[name.strip().lower()] = value.strip()

    @property
    def keep_alive(self) -> bool:
        """Whether the connection stays open after the response (HTTP/1.1 unless closed)."""
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return connection == "keep-alive"
        return connection != "close"


class _Host:
    """One host of the web: its address, its request counts and its connections."""

    def __init__(self, address: str, web: TestWeb):
        self.address = address
        self.web = web
        self._hits: dict[tuple[str, str], int] = {}
        self.writers: set[asyncio.StreamWriter] = set()

    def hit(self, agent: str, path: str) -> int:
        """How often ``path`` was asked of this host before by the client ``agent``
        (its User-Agent): each client meets the stateful pages afresh, so that a test's
        result does not depend on which tests asked them before it."""
        count = self._hits.get((agent, path), 0)
        self._hits[(agent, path)] = count + 1
        return count

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer the requests of one connection until either side closes it."""
        self.writers.add(writer)
        client = writer.get_extra_info("peername")[1]
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                try:
                    request = _Request(head)
                except ValueError:
                    writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                    return
                if not await self._answer(request, writer, client):
                    return
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            return  # the client hung up, or sent a head too large
        finally:
            self.writers.discard(writer)
            writer.close()

    async def _answer(self, request: _Request, writer: asyncio.StreamWriter, client: int) -> bool:
        """Send the response to one request and log it; whether to keep the connection."""
        entry = {
            "host": self.address,
            "path": request.path,
            "ua": request.headers.get("user-agent", ""),
            "status": 501,
            "if_none_match": request.headers.get("if-none-match"),
            "if_modified_since": request.headers.get("if-modified-since"),
            "start": time.time(),
            "client": client,
        }
        if request.method != "GET":
            await _send(writer, Response(501, b"", "text/plain"), lambda: self._log(entry))
            return False
        web = self.web
        hit = self.hit(entry["ua"], request.path)
        response = web.site.respond(self.address, request.path, hit, web.epoch, web.epoch_time)
        response = not_modified(response, request.headers) or response
        entry["status"] = response.status
        if response.delay_ms:
            await asyncio.sleep(response.delay_ms / 1000.0)
        try:
            await _send(writer, response, lambda: self._log(entry))
        except ConnectionError:
            self._log(entry)  # the client gave up (limits): log it all the same
            return False
        return response.mode == "normal" and request.keep_alive

    def _log(self, entry: dict) -> None:
        """Log the request once. Called before the response's last byte is sent, so that a
        client that has read the whole response always finds its request in the log."""
        if "end" not in entry:
            entry["end"] = time.time()
            self.web.log.write(entry)


async def _send(writer: asyncio.StreamWriter, response: Response, log) -> None:
    """Write ``response``, calling ``log`` before its last byte (or at once when it has
    no body, is a reset or garbage)."""
    if response.mode == "reset":
        log()
        return
    if response.mode == "garbage":
        log()
        writer.write(b"HTTP/1.1 twohundred OK\r\nGarbage\r\n\r\n")
        return
    body = gzip.compress(response.body, mtime=0) if response.gzip else response.body
    headers = [
        ("Server", SERVER),
        ("Date", formatdate(usegmt=True)),
        ("Content-Type", response.content_type),
        ("Content-Length", str(len(body))),
    ]
    if response.gzip:
        headers.append(("Content-Encoding", "gzip"))
    headers.extend(response.headers)
    head = f"HTTP/1.1 {response.status} {responses.get(response.status, '')}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers
    )
    writer.write(head.encode("latin-1") + b"\r\n")
    if response.mode == "trickle":
        for byte in body[:-1]:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(TRICKLE_BYTE_S)
    elif response.mode == "stream":
        for start in range(0, len(body) - 1, STREAM_CHUNK):
            writer.write(body[start : min(start + STREAM_CHUNK, len(body) - 1)])
            await writer.drain()
            await asyncio.sleep(STREAM_PAUSE_S)
    else:
        writer.write(body[:-1])
    await writer.drain()
    log()
    writer.write(body[-1:])
    await writer.drain()


SERVER = "TrawlTestWeb/1.0"


def not_modified(response: Response, request_headers: dict[str, str]) -> Response | None:
    """A 304 for a conditional request (header names in lower case) whose validator still
    matches (RFC 9110 13.1):
    If-None-Match against the ETag; else If-Modified-Since against Last-Modified."""
    if response.status != 200:
        return None
    headers = dict(response.headers)
    etag, modified = headers.get("ETag"), headers.get("Last-Modified")
    validators = tuple((k, v) for k, v in response.headers if k in ("ETag", "Last-Modified"))
    asked_etag = request_headers.get("if-none-match")
    if asked_etag is not None:
        tags = [tag.strip() for tag in asked_etag.split(",")]
        matches = etag is not None and (etag in tags or "*" in tags)
        return Response(304, b"", headers=validators) if matches else None
    asked_date = request_headers.get("if-modified-since")
    if asked_date and modified:
        try:
            fresh = parsedate_to_datetime(modified) <= parsedate_to_datetime(asked_date)
        except (TypeError, ValueError):
            return None
        return Response(304, b"", headers=validators) if fresh else None
    return None


class TestWeb:
    """All hosts of a ``Site``, served by one asyncio event loop in a background thread
    (one thread whatever the number of hosts: a thread per host and per connection
    thrashed at 2,000 hosts)."""

    __test__ = False  # not a pytest test class

    def __init__(self, hosts: list[str], port: int, log_path: Path, **site_options):
        self.log = RequestLog(log_path)
        port = port or _free_port(hosts[0])
        self.site = Site(tuple(hosts), port, **site_options)
        self.hosts = [_Host(host, self) for host in hosts]
        self.epoch = 0  # pages under /fresh/ change when it advances (advance_epoch)
        self.epoch_time = 0.0  # when the current epoch began; 0 for the first
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list[asyncio.Server] = []

    def advance_epoch(self, by: int = 1) -> None:
        """Move the web ``by`` epochs on (negative: back); a new epoch begins now."""
        self.epoch += by
        self.epoch_time = time.time() if self.epoch else 0.0

    def start(self) -> TestWeb:
        """Listen on every host's address; serve in the background from now on."""
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result()
        return self

    async def _listen(self) -> None:
        for host in self.hosts:
            server = await asyncio.start_server(
                host.serve, host.address, self.site.port, reuse_address=True, backlog=128
            )
            self._servers.append(server)

    def stop(self) -> None:
        """Stop serving, close open connections and the log."""
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
        self.log.close()

    async def _close(self) -> None:
        # Closed connections end their tasks by themselves (a read that ends); a
        # cancelled read would log a traceback for every connection.
        for server in self._servers:
            server.close()
        for host in self.hosts:
            for writer in list(host.writers):
                writer.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=1.0)
            for task in pending:  # a response still sleeping (delay, trickle)
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    @property
    def seeds(self) -> list[str]:
        """The home page of every host of the ring."""
        return [f"{self.site.base(i)}/" for i in range(self.site.ring)]


def loopback_hosts(count: int, subnet: int = 1) -> list[str]:
    """``count`` loopback addresses ``127.0.<subnet>.1`` ... (each host its own address);
    past 250 hosts the next subnet is used."""
    return [f"127.0.{subnet + i // 250}.{i % 250 + 1}" for i in range(count)]


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]
