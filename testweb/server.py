"""The local test web: one HTTP/1.1 server per host, each on its own loopback address.

Every request is appended to a request log (JSON lines: ``host``, ``path``, ``ua``,
``status``, ``start`` and ``end`` as epoch seconds, ``client`` port) that tests read to
prove what the crawler did on the wire. Sockets set TCP_NODELAY (without it a stdlib
server answers in about 44 ms per request).
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from email.utils import parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from testweb.site import Response, Site


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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY on every connection
    server_version = "TrawlTestWeb/1.0"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._start = time.time()
        self._logged = False
        hit = self.server.hit(self.path)
        web = self.server.web
        response = self.server.site.respond(self._host, self.path, hit, web.epoch, web.epoch_time)
        response = not_modified(response, self.headers) or response
        self._status = response.status
        if response.delay_ms:
            time.sleep(response.delay_ms / 1000.0)
        try:
            self._send(response)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (limits): log it all the same
        self._log()

    @property
    def _host(self) -> str:
        return self.server.server_address[0]

    def _log(self) -> None:
        """Log the request once. Called before the response's last byte is sent, so that a
        client that has read the whole response always finds its request in the log."""
        if self._logged:
            return
        self._logged = True
        self.server.log.write(
            {
                "host": self._host,
                "path": self.path,
                "ua": self.headers.get("User-Agent", ""),
                "status": self._status,
                "if_none_match": self.headers.get("If-None-Match"),
                "if_modified_since": self.headers.get("If-Modified-Since"),
                "start": self._start,
                "end": time.time(),
                "client": self.client_address[1],
            }
        )

    def _send(self, response) -> None:
        if response.mode == "reset":
            self._log()
            self.close_connection = True
            return
        if response.mode == "garbage":
            self._log()
            self.wfile.write(b"HTTP/1.1 twohundred OK\r\nGarbage\r\n\r\n")
            self.close_connection = True
            return
        body = gzip.compress(response.body, mtime=0) if response.gzip else response.body
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(body)))
        if response.gzip:
            self.send_header("Content-Encoding", "gzip")
        for name, value in response.headers:
            self.send_header(name, value)
        if not body:
            self._log()
        self.end_headers()
        if response.mode == "trickle":
            for byte in body[:-1]:
                self.wfile.write(bytes([byte]))
                time.sleep(0.3)
        else:
            self.wfile.write(body[:-1])
        self._log()
        self.wfile.write(body[-1:])

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        """Quiet: the request log is the record."""


class _HostServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, site: Site, log: RequestLog, web: TestWeb):
        self.site = site
        self.web = web  # shared state of all hosts: the epoch
        self.log = log
        self._hits: dict[str, int] = {}
        self._hits_lock = threading.Lock()
        super().__init__(address, _Handler)

    def hit(self, path: str) -> int:
        """How often ``path`` was asked of this host before."""
        with self._hits_lock:
            count = self._hits.get(path, 0)
            self._hits[path] = count + 1
            return count

    def handle_error(self, request, client_address) -> None:
        """A client that hangs up early (content limit, timeout) is normal here."""


def not_modified(response: Response, request_headers) -> Response | None:
    """A 304 for a conditional request whose validator still matches (RFC 9110 13.1):
    If-None-Match against the ETag; else If-Modified-Since against Last-Modified."""
    if response.status != 200:
        return None
    headers = dict(response.headers)
    etag, modified = headers.get("ETag"), headers.get("Last-Modified")
    validators = tuple((k, v) for k, v in response.headers if k in ("ETag", "Last-Modified"))
    asked_etag = request_headers.get("If-None-Match")
    if asked_etag is not None:
        tags = [tag.strip() for tag in asked_etag.split(",")]
        matches = etag is not None and (etag in tags or "*" in tags)
        return Response(304, b"", headers=validators) if matches else None
    asked_date = request_headers.get("If-Modified-Since")
    if asked_date and modified:
        try:
            fresh = parsedate_to_datetime(modified) <= parsedate_to_datetime(asked_date)
        except (TypeError, ValueError):
            return None
        return Response(304, b"", headers=validators) if fresh else None
    return None


class TestWeb:
    """All hosts of a ``Site``, served from threads of this process."""

    __test__ = False  # not a pytest test class

    def __init__(self, hosts: list[str], port: int, log_path: Path, **site_options):
        self.log = RequestLog(log_path)
        self.servers: list[_HostServer] = []
        port = port or _free_port(hosts[0])
        self.site = Site(tuple(hosts), port, **site_options)
        self.epoch = 0  # pages under /fresh/ change when it advances (advance_epoch)
        self.epoch_time = 0.0  # when the current epoch began; 0 for the first
        for host in hosts:
            self.servers.append(_HostServer((host, port), self.site, self.log, self))

    def advance_epoch(self, by: int = 1) -> None:
        """Move the web ``by`` epochs on (negative: back); a new epoch begins now."""
        self.epoch += by
        self.epoch_time = time.time() if self.epoch else 0.0

    def start(self) -> TestWeb:
        """Serve every host in a background thread."""
        for server in self.servers:
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and close the log."""
        # shutdown() waits for the serving loop's next poll: stop all hosts at once.
        stoppers = [threading.Thread(target=server.shutdown) for server in self.servers]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
        for server in self.servers:
            server.server_close()
        self.log.close()

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
