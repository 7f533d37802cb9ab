"""URLs: resolve links as browsers do, normalize to the crawldb key, filter out of scope.

Every URL entering the crawldb passes ``resolve -> normalize -> filter`` (README, data
flow step 1 and 5). Resolution is the WHATWG URL Standard, through ada-url, so that
whitespace, backslashes, dot segments, IDNs and percent-encoding are handled exactly as
a browser would. Normalization keeps the URL one the site serves: scheme and host are
lower case (the parser does it), default ports and fragments go, and percent-escapes
are made canonical (RFC 3986 section 6.2.2).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ada_url import URL

_PERCENT_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
# Schemes with a host and a hierarchical path, whose escapes can be made canonical.
_HIERARCHICAL = frozenset({"http:", "https:", "ftp:", "ws:", "wss:"})
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def resolve(href: str, base: str | None) -> str | None:
    """Resolve a link against its base URL (``None``: absolute only) by the WHATWG rules.

    Returns ``None`` when the URL parser rejects the input.
    """
    try:
        return URL(href, base=base).href
    except ValueError:
        return None


def normalize(url: str) -> str | None:
    """The crawldb key of an absolute URL, or ``None`` when it does not parse."""
    try:
        parsed = URL(url)
    except ValueError:
        return None
    parsed.hash = ""
    if parsed.protocol in _HIERARCHICAL:
        parsed.pathname = _canonical_escapes(parsed.pathname)
        if parsed.search:
            parsed.search = _canonical_escapes(parsed.search[1:])
    href = parsed.href
    # Setting an empty fragment leaves a bare "#" on some inputs; it is not part of the key.
    return href[:-1] if href.endswith("#") else href


def host_of(url: str) -> str:
    """Host name of a URL (no port): the unit of politeness and of partitioning."""
    return URL(url).hostname


def scheme_of(url: str) -> str:
    """Scheme of a URL without the colon, in lower case."""
    return URL(url).protocol.rstrip(":")


def _canonical_escapes(text: str) -> str:
    """Decode escapes of unreserved characters and upper-case the hex digits of the rest."""

    def fix(match: re.Match[str]) -> str:
        byte = int(match.group(1), 16)
        if byte in _UNRESERVED:
            return chr(byte)
        return "%" + match.group(1).upper()

    return _PERCENT_ESCAPE.sub(fix, text)


class UrlFilter:
    """Scope rules: scheme, length and binary suffixes. ``reject(url)`` names the reason."""

    def __init__(self, conf: Mapping[str, Any]):
        self.schemes = frozenset(s.lower() for s in conf["urlfilter.schemes"])
        self.max_length = conf["urlfilter.max.length"]
        self.suffixes = tuple(s.lower() for s in conf["urlfilter.suffix"])

    def reject(self, url: str) -> str | None:
        """Why the normalized URL is out of scope, or ``None`` when it is kept."""
        parsed = URL(url)
        if parsed.protocol.rstrip(":") not in self.schemes:
            return "scheme"
        if len(url) > self.max_length:
            return "too_long"
        if parsed.pathname.lower().endswith(self.suffixes):
            return "suffix"
        return None


def clean(url: str, url_filter: UrlFilter) -> tuple[str | None, str | None]:
    """Normalize then filter an absolute URL: ``(key, None)`` or ``(None, reason)``."""
    key = normalize(url)
    if key is None:
        return None, "invalid"
    reason = url_filter.reject(key)
    return (None, reason) if reason else (key, None)
