"""A urllib3 pool manager that connects only to the addresses the resolver allows, for
the crawl-job API's callbacks (``api/callbacks.py``). The fetcher uses ``lib.fetching.http``."""

from __future__ import annotations

import socket

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

from lib.fetching.resolver import Resolver


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
