"""Host name resolution for the fetcher: cached per host, checked against the address policy.

The fetcher connects to exactly the address this module checked, so a host cannot pass
the check with one DNS answer and be reached at another (no DNS-rebinding gap). Unless
``fetcher.allow.private.networks`` is set, addresses that are loopback, private,
link-local (169.254.169.254, the cloud metadata service), multicast, reserved or
unspecified are refused, on every request and every redirect hop. While the crawler's
agent is unnamed (``lib.fetching.agent``), every address but loopback is refused too.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable

from lib.fetching.agent import is_loopback_address
from lib.vocabulary import REASON_AGENT, REASON_DNS, REASON_PRIVATE


class AddressRefused(Exception):
    """A host's address is not one the fetcher may connect to."""

    def __init__(self, host: str, reason: str, detail: str):
        super().__init__(f"{host}: {detail}")
        self.host = host
        self.reason = reason


def refusal(address: str) -> str | None:
    """Why an IP address is refused under the default policy, or ``None``."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    checks = (
        # Most specific first: link-local addresses are "private" to ipaddress too.
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("private", ip.is_private),
        ("multicast", ip.is_multicast),
        ("reserved", ip.is_reserved),
        ("unspecified", ip.is_unspecified),
    )
    for name, hit in checks:
        if hit:
            return name
    return None


class Resolver:
    """``getaddrinfo`` with a per-host cache (``ttl`` seconds) and the address policy;
    ``loopback_only``: the agent is unnamed, and only loopback addresses are reached."""

    def __init__(
        self,
        ttl: float,
        allow_private: bool,
        lookup: Callable = socket.getaddrinfo,
        clock: Callable[[], float] = time.monotonic,
        loopback_only: bool = False,
    ):
        self.ttl = ttl
        self.allow_private = allow_private
        self.loopback_only = loopback_only
        self.lookup = lookup
        self.clock = clock
        self._cache: dict[tuple[str, int], tuple[float, list]] = {}
        self._lock = threading.Lock()

    def cached(self, host: str, port: int) -> list[tuple] | None:
        """The host's allowed addresses if a fresh answer is cached (no lookup), else ``None``."""
        with self._lock:
            entry = self._cache.get((host.lower(), port))
        return entry[1] if entry and self.clock() < entry[0] else None

    def addresses(self, host: str, port: int) -> list[tuple]:
        """``(family, type, proto, canonname, sockaddr)`` entries the fetcher may use."""
        cached = self.cached(host, port)
        if cached is not None:
            return cached
        key = (host.lower(), port)
        try:
            answers = self.lookup(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise AddressRefused(host, REASON_DNS, f"cannot resolve: {exc}") from exc
        allowed = self._allowed(host, answers)
        with self._lock:
            self._cache[key] = (self.clock() + self.ttl, allowed)
        return allowed

    def _allowed(self, host: str, answers: list[tuple]) -> list[tuple]:
        allowed = answers
        if not self.allow_private:
            allowed = [a for a in answers if refusal(a[4][0]) is None]
        if allowed and self.loopback_only:
            allowed = [a for a in allowed if is_loopback_address(a[4][0])]
            if not allowed:
                raise AddressRefused(
                    host,
                    REASON_AGENT,
                    "not a loopback address, and http.agent.name or http.agent.url is "
                    "left at the default: set them to crawl beyond this machine",
                )
        if not allowed:
            kinds = sorted({f"{a[4][0]} ({refusal(a[4][0])})" for a in answers})
            raise AddressRefused(
                host,
                REASON_PRIVATE,
                f"resolves only to refused addresses {', '.join(kinds)}; "
                "set fetcher.allow.private.networks=true to crawl private networks",
            )
        return allowed
