"""The fetcher's HTTP client (libcurl) on real loopback servers: TLS verification, one
kept connection per host, no silent second request, and how response heads are read."""

import ssl
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import trustme

from lib import vocabulary as st
from lib.config import load_config
from lib.fetching.http import HttpClient, parse_head
from lib.fetching.resolver import Resolver
from lib.vocabulary import REASON_TLS

pytestmark = pytest.mark.web


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def do_GET(self):  # noqa: N802 - http.server's name
        self.server.hits[self.path] += 1
        self.server.peers.add(self.client_address)
        if self.path == "/slow":
            time.sleep(0.3)
        if self.path == "/noticed":  # tells the test it has the request, answers soon after
            self.server.noticed.set()
            time.sleep(0.2)
        if self.path == "/drop":  # closes the connection without answering
            self.close_connection = True
            return
        body = b"hello over " + self.path.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        """Quiet."""


@pytest.fixture()
def server(request):
    """A keep-alive HTTP/1.1 server on 127.0.9.1 (TLS when parametrized with a CA)."""
    ca = getattr(request, "param", None)
    httpd = ThreadingHTTPServer(("127.0.9.1", 0), _Handler)
    httpd.hits, httpd.peers, httpd.noticed = Counter(), set(), threading.Event()
    if ca is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.9.1").configure_cert(context)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    scheme = "https" if ca is not None else "http"
    yield httpd, f"{scheme}://127.0.9.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def client(*overrides) -> HttpClient:
    conf = load_config(overrides=["fetcher.allow.private.networks=true", *overrides])
    return HttpClient(conf, 4, Resolver(conf["fetcher.dns.ttl"], allow_private=True))


@pytest.mark.parametrize("server", [trustme.CA()], indirect=True)
def test_tls_certificates_are_verified_unless_turned_off(server):
    _, base = server  # its certificate is signed by a CA nobody trusts
    refused = client().get(f"{base}/page")
    assert refused.status is None and refused.error == REASON_TLS, refused.error_detail
    unverified = client("http.tls.verify=false").get(f"{base}/page")
    assert unverified.error is None and unverified.status == 200
    assert unverified.body == b"hello over /page" and unverified.peer == "127.0.9.1"


def test_one_kept_connection_per_host(server):
    httpd, base = server
    http = client()
    answers = [http.get(f"{base}/page/{k}") for k in range(5)]
    assert [a.status for a in answers] == [200] * 5
    assert len(httpd.peers) == 1  # one TCP connection served all five
    http.close()


def test_a_request_is_not_sent_again_when_the_kept_connection_dies(server):
    httpd, base = server
    http = client()
    assert http.get(f"{base}/first").status == 200  # leaves a kept connection
    dropped = http.get(f"{base}/drop")  # on it: closed without an answer
    assert dropped.error == st.REASON_CONNECTION and dropped.status is None
    assert httpd.hits["/drop"] == 1  # libcurl would have sent it again at once
    assert http.get(f"{base}/after").status == 200  # a fresh connection next time


def test_private_addresses_are_refused_on_the_connected_socket(server):
    _, base = server
    conf = load_config(overrides=["fetcher.allow.private.networks=false"])
    # A resolver that lets everything through: the connected address is checked anyway.
    http = HttpClient(conf, 1, Resolver(conf["fetcher.dns.ttl"], allow_private=True))
    exchange = http.get(f"{base}/page")
    assert exchange.error == "private_address" and "127.0.9.1" in exchange.error_detail


def test_response_heads_are_read_as_sent():
    lines = [
        b"HTTP/1.1 100 Continue\r\n",
        b"\r\n",
        b"HTTP/1.1 404 Not  Found Here\r\n",
        b"Content-Type: text/html\r\n",
        b"X-Long: first part\r\n",
        b"  continued\r\n",
        b"no colon on this line\r\n",
        b"Set-Cookie: a=1\r\n",
        b"Set-Cookie: b=2\r\n",
        b"X-Latin: caf\xe9\r\n",
        b"\r\n",
    ]
    status_line, headers = parse_head(lines)
    assert status_line == "HTTP/1.1 404 Not  Found Here"
    assert headers == [
        ("Content-Type", "text/html"),
        ("X-Long", "first part continued"),
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
        ("X-Latin", "café"),
    ]
    assert parse_head([]) == (None, [])


def test_a_stalled_caller_is_not_counted_as_server_time(server):
    httpd, base = server
    http = client()
    http.start(f"{base}/noticed")
    while not httpd.noticed.is_set():  # until the request is out (libcurl sends it in poll)
        assert http.poll(0.001) == []
    time.sleep(0.8)  # the caller looks at the network only now; the answer came at 0.2 s
    while not (ended := http.poll(1.0)):
        pass
    stalled = ended[0][1]
    assert stalled.status == 200 and stalled.duration_ms >= 800
    assert stalled.stalled_ms >= 600 and stalled.server_seconds < 0.5
    http.start(f"{base}/slow")  # the server takes 0.3 s; the caller waits on the network
    while not (ended := http.poll(1.0)):
        pass
    slow = ended[0][1]
    assert slow.stalled_ms == 0 and slow.server_seconds >= 0.3
    http.close()
