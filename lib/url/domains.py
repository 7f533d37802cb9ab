"""Registered domains (``example.co.uk`` for ``www.shop.example.co.uk``), from the Public
Suffix List bundled with the ``publicsuffixlist`` package (offline, no download)."""

from __future__ import annotations

import functools
import ipaddress

from publicsuffixlist import PublicSuffixList


@functools.cache
def _suffix_list() -> PublicSuffixList:
    return PublicSuffixList()


# Hosts whose domains a process keeps: a task sees the same hosts batch after batch
# (admission's buckets, generate's group keys), and the lookup is the costly part.
DOMAINS_KEPT = 1 << 16


@functools.lru_cache(maxsize=DOMAINS_KEPT)
def registered_domain(host: str) -> str:
    """The domain a host belongs to; an IP address or a bare name is its own domain."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    return _suffix_list().privatesuffix(host.lower()) or host.lower()


def same_site(host_a: str, host_b: str, mode: str) -> bool:
    """True when two hosts are one site under ``db.ignore.external.links.mode``."""
    if mode == "byHost":
        return host_a == host_b
    if mode == "byDomain":
        return registered_domain(host_a) == registered_domain(host_b)
    raise ValueError(f"db.ignore.external.links.mode must be byHost or byDomain, not {mode!r}")
