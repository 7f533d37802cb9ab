"""The crawl-job API's rules without the API server: URL cleaning, states, rate limit,
callback targets (one real callback server on loopback) and back-off."""

import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from api.auth import RateLimiter, owner_of
from api.callbacks import CallbackSender
from lib import vocabulary as st
from lib.apijobs import clean_urls, job_status, retry_delay, url_state
from lib.config import load_config
from lib.url.filter import UrlFilter


def test_urls_are_cleaned_like_links_and_refusals_say_why():
    conf = load_config()
    accepted, rejected = clean_urls(
        ["HTTP://Example.COM:80/a/../b#frag", "http://example.com/b", "mailto:x@y.z", "nonsense"],
        UrlFilter(conf),
    )
    assert accepted == ["http://example.com/b"]  # normalized, once
    assert [r["url"] for r in rejected] == ["mailto:x@y.z", "nonsense"]
    assert all(r["reason"] for r in rejected)


def test_url_states_and_job_status():
    assert url_state(st.FETCHED, None) == "fetched"
    assert url_state(st.NOTMODIFIED, None) == "fetched"
    assert url_state(st.GONE, st.REASON_ROBOTS_DENIED) == "blocked_by_robots"
    assert url_state(st.GONE, "http_404") == "failed"
    assert url_state(st.REDIR_PERM, None) == "redirected"
    assert url_state(st.UNFETCHED, None) == "queued"
    assert url_state(None, None, cancelled=True) == "cancelled"
    running = job_status([("fetched", None), ("queued", None)], cancelled=False)
    assert running["status"] == "running" and running["counts"]["fetched"] == 1
    done = job_status([("fetched", None), ("failed", "http_404")], cancelled=False)
    assert done["status"] == "done" and done["failed_reasons"] == {"http_404": 1}
    assert job_status([("queued", None)], cancelled=False)["status"] == "queued"
    assert job_status([("queued", None)], cancelled=True)["status"] == "cancelled"


def test_rate_limit_is_per_key_and_per_minute():
    limiter = RateLimiter(3)
    assert [limiter.wait_time("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert 59 < limiter.wait_time("a") <= 60  # the fourth call within a minute waits
    assert limiter.wait_time("b") == 0.0
    assert owner_of("secret") != "secret" and len(owner_of("secret")) == 16


def test_callback_targets_obey_the_fetchers_address_rules():
    strict = CallbackSender(None, load_config(), status_of=None)
    assert "loopback" in strict._refused("http://127.0.0.1:9/done")
    assert "link-local" in strict._refused("http://169.254.169.254/latest")
    assert "10.1.2.3 (private)" in strict._refused("http://10.1.2.3/")
    assert strict._refused("ftp://example.com/") is not None
    lenient = CallbackSender(
        None, load_config(overrides=["fetcher.allow.private.networks=true"]), status_of=None
    )
    assert lenient._refused("http://127.0.0.1:9/done") is None


class _Appended:
    """The API tables' ``append``, kept in memory."""

    def __init__(self):
        self.rows = []

    def append(self, name, rows):
        self.rows += [(name, row) for row in rows]


def _callback_server():
    """A real HTTP server on 127.0.0.1 that answers every POST with 200 and keeps its path."""
    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            received.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, received


def _sender(answers, *overrides):
    """A callback sender whose DNS gives ``answers`` in turn (one per lookup, no cache)."""
    tables = _Appended()
    sender = CallbackSender(tables, load_config(overrides=list(overrides)), status_of=None)
    addresses = iter(answers)

    def lookup(host, port, type):  # noqa: A002 - getaddrinfo's keyword
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(addresses), port))]

    sender.resolver.lookup, sender.resolver.ttl = lookup, 0
    return sender, tables


def test_a_callback_target_rebinding_to_a_refused_address_is_not_called(capsys):
    """The address rule holds on the address connected to, not only on the one checked:
    a name that resolves to a public address when checked and to loopback when called
    (DNS rebinding) gets no request, and the callback is recorded as not delivered."""
    server, received = _callback_server()
    port = server.server_address[1]
    try:
        job = {"job_id": "j1", "callback_url": f"http://rebind.test:{port}/done"}
        sender, tables = _sender(["93.184.216.34", "127.0.0.1"])
        sender._try(job, {"status": "done"})
        assert received == []
        assert [(n, r["delivered"], r["http_status"]) for n, r in tables.rows] == [
            ("callbacks", False, None)
        ]
        # refused when connecting, on the second answer, not by the check before
        assert "refused: rebind.test: resolves only to refused addresses 127.0.0.1 (loopback)" in (
            capsys.readouterr().out
        )
        # The same server is reached when private networks are allowed.
        lenient, tables = _sender(["127.0.0.1"] * 2, "fetcher.allow.private.networks=true")
        lenient._try(job, {"status": "done"})
        assert received == ["/done"]
        assert [(r["delivered"], r["http_status"]) for _, r in tables.rows] == [(True, 200)]
    finally:
        server.shutdown()


def test_callback_retries_back_off_doubling_up_to_a_cap():
    assert [retry_delay(n, 2.0, 10.0) for n in (1, 2, 3, 4, 5)] == [2.0, 4.0, 8.0, 10.0, 10.0]
