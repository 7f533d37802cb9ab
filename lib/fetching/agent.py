"""Who the crawler says it is. As Nutch refuses to fetch without an agent name, Trawl
reaches no host beyond this machine's loopback while ``http.agent.name`` or
``http.agent.url`` is left at the defaults file's placeholder: a site's operator must be
able to tell whose crawler calls and how to reach its owner. The demo and the tests'
loopback webs need neither."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from lib.config import KEYS_AT_DEFAULT, Config
from lib.errors import UsageError

AGENT_KEYS = ("http.agent.name", "http.agent.url")
HOSTS_NAMED = 3  # hosts a refusal names, of the many a fetch list may hold


def unnamed_keys(settings: Mapping[str, Any]) -> list[str]:
    """The agent keys left at their defaults (``settings``: a ``Config``, or its
    ``as_dict()`` as the tasks have it)."""
    if isinstance(settings, Config):
        at_default = settings.keys_at_default()
    else:
        at_default = settings.get(KEYS_AT_DEFAULT, ())
    return [key for key in AGENT_KEYS if key in at_default]


def is_loopback_host(host: str) -> bool:
    """Whether a URL's host names this machine: a loopback address, ``localhost`` or a
    name under ``.localhost`` (RFC 6761), which resolvers answer with loopback."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return is_loopback_address(name)
    except ValueError:
        return False


def is_loopback_address(address: str) -> bool:
    """Whether an IP address (v4, v6, v4-mapped v6) is a loopback address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def require_named_agent(settings: Mapping[str, Any], hosts: Iterable[str]) -> None:
    """Raise ``UsageError`` when a host beyond loopback is to be fetched under an agent
    left at its defaults, naming the keys and a few of the hosts."""
    unnamed = unnamed_keys(settings)
    if not unnamed:
        return
    beyond = sorted(host for host in set(hosts) if not is_loopback_host(host))
    if not beyond:
        return
    named = ", ".join(beyond[:HOSTS_NAMED])
    more = f" and {len(beyond) - HOSTS_NAMED} more" if len(beyond) > HOSTS_NAMED else ""
    keys = " and ".join(f"{key} (now {settings[key]!r})" for key in unnamed)
    raise UsageError(
        f"{keys} left at the default: set your crawler's name and contact page "
        f"(--conf or a --conf-file site file) before fetching {named}{more}"
    )
