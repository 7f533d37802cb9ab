"""URLs: resolve links as browsers do, normalize to the crawldb key, filter out of scope.

Every URL entering the crawldb passes ``resolve -> normalize -> filter``
(docs/architecture.md, a round's steps 1 and 5). Resolution is the WHATWG URL
Standard, through ada-url, so that
whitespace, backslashes, dot segments, IDNs and percent-encoding are handled exactly as
a browser would. Normalization keeps the URL one the site serves: scheme and host are
lower case (the parser does it), default ports and fragments go, and percent-escapes
are made canonical (RFC 3986 section 6.2.2).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Any

from ada_url import URL, join_url

_PERCENT_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
# Schemes with a host and a hierarchical path, whose escapes can be made canonical.
_HIERARCHICAL = frozenset({"http:", "https:", "ftp:", "ws:", "wss:"})
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def resolve(href: str, base: str | None) -> str | None:
    """Resolve a link against its base URL (``None``: absolute only) by the WHATWG rules.

    Returns ``None`` when the URL parser rejects the input.
    """
    try:
        return join_url(base, href) if base is not None else URL(href).href
    except ValueError:
        return None


def normalize(url: str, strip: ParamStripper | None = None) -> str | None:
    """The crawldb key of an absolute URL, or ``None`` when it does not parse.

    Only rules that keep the URL one the site serves: parser canonicalization, no
    fragment, canonical escapes, and (with ``strip``) no session or tracking parameters.
    """
    try:
        parsed = URL(url)
    except ValueError:
        return None
    parsed.hash = ""
    if parsed.protocol in _HIERARCHICAL:
        path = _canonical_escapes(parsed.pathname)
        query = _canonical_escapes(parsed.search[1:]) if parsed.search else ""
        if strip is not None:
            path, query = strip.path(path), strip.query(query)
        parsed.pathname = path
        parsed.search = query
    href = parsed.href
    # Setting an empty fragment or query leaves a bare "#" or "?": not part of the key.
    return href.rstrip("#").removesuffix("?") if href.endswith(("#", "?")) else href


class ParamStripper:
    """Removes session and tracking parameters named by glob patterns (``utm_*``), from the
    query and as ``;name=value`` path parameters (``;jsessionid=``), case-insensitively."""

    def __init__(self, patterns: list[str]):
        self.patterns = [p.lower() for p in patterns]
        names = "|".join(re.escape(p).replace(r"\*", r"[^=;/?]*") for p in self.patterns)
        self._path_param = re.compile(rf";(?:{names})=[^/;?]*", re.I) if names else None

    def matches(self, name: str) -> bool:
        """True when a parameter name is one to strip."""
        lowered = name.lower()
        return any(fnmatch.fnmatchcase(lowered, p) for p in self.patterns)

    def query(self, query: str) -> str:
        """The query without stripped parameters, other parameters in their order."""
        if not query or not self.patterns:
            return query
        kept = [p for p in query.split("&") if p and not self.matches(p.split("=", 1)[0])]
        return "&".join(kept)

    def path(self, path: str) -> str:
        """The path without stripped ``;name=value`` parameters."""
        return self._path_param.sub("", path) if self._path_param else path


class UrlNormalizer:
    """The two keys of a URL: ``key`` (the crawldb key, fetched as is) and ``dedup`` (the
    aggressive form used to spot variants of one page, never fetched).

    ``dedup`` adds the rules that could name a URL the site does not serve: sorted query
    parameters (``urlnormalizer.sort.query``), no ``www.`` (``urlnormalizer.drop.www``), no
    trailing slash (``urlnormalizer.drop.trailing.slash``). Keeping them out of the key
    means Trawl never fetches a URL it made up, and a redirect ``/a/`` -> ``/a`` cannot
    loop: both are stored as fetched, and share one dedup key.
    """

    def __init__(self, conf: Mapping[str, Any]):
        self.strip = ParamStripper(conf["urlnormalizer.strip.params"])
        self.sort_query = conf["urlnormalizer.sort.query"]
        self.drop_www = conf["urlnormalizer.drop.www"]
        self.drop_slash = conf["urlnormalizer.drop.trailing.slash"]

    def key(self, url: str) -> str | None:
        """The crawldb key, or ``None`` when the URL does not parse."""
        return normalize(url, self.strip)

    def dedup(self, key: str) -> str:
        """The dedup key of a crawldb key (read without parsing it when it is a plain
        http(s) URL without query: most keys)."""
        plain = _plain_host(key)
        if plain is not None:
            path = key[plain.end(0) - 1 :]
            if path.startswith("/") and "?" not in path and "#" not in path:
                return self._dedup_of(key[: plain.start(1)], plain.group(1), plain.group(2), path)
        parsed = URL(key)
        if parsed.protocol not in _HIERARCHICAL:
            return key
        host = parsed.hostname
        if self.drop_www and host.startswith("www."):
            host = host[4:]
        path = parsed.pathname
        if self.drop_slash and len(path) > 1 and path.endswith("/"):
            path = path.rstrip("/") or "/"
        query = parsed.search[1:]
        if self.sort_query and query:
            query = "&".join(sorted(query.split("&")))
        port = f":{parsed.port}" if parsed.port else ""
        return f"{parsed.protocol}//{host}{port}{path}" + (f"?{query}" if query else "")

    def _dedup_of(self, origin: str, host: str, port: str | None, path: str) -> str:
        """``dedup`` of a plain URL, from its ``scheme://``, host, port and path."""
        if self.drop_www and host.startswith("www."):
            host = host[4:]
        if self.drop_slash and len(path) > 1 and path.endswith("/"):
            path = path.rstrip("/") or "/"
        return f"{origin}{host}:{port}{path}" if port else f"{origin}{host}{path}"


# A URL already in canonical form whose host the parser would return as written: a
# lower-case name whose last label starts with a letter (so not an IPv4 address in any
# of the forms the parser rewrites, such as 0x7f.1), or a dotted quad without leading
# zeros; no user info, IPv6 or percent-escape. Group 1 is the host.
_PLAIN_HOST = re.compile(
    r"https?://((?:[a-z0-9-]+\.)*[a-z][a-z0-9-]*"
    r"|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))"
    r"(?::(\d{1,5}))?(?:[/?#]|\Z)"
)


# A URL as the parser serializes it (resolve's output) that normalize leaves unchanged:
# http(s), no fragment, percent-escape, query or path parameter.
_KEY_AS_IS = re.compile(r"https?://[^#%?;]*\Z")


def normalize_resolved(href: str, strip: ParamStripper | None = None) -> str | None:
    """``normalize`` of a URL that ``resolve`` returned, without parsing it again when
    nothing in it can change (most links: a parse saved each)."""
    return href if _KEY_AS_IS.match(href) else normalize(href, strip)


def plain_parts(key: str) -> tuple[str, str, str] | None:
    """``(scheme, host, path)`` of a normalized http(s) URL with a plain host (see
    ``_PLAIN_HOST``) and no query, read without parsing it; ``None`` for the others."""
    plain = _plain_host(key)
    if plain is None:
        return None
    path = key[plain.end(0) - 1 :]
    if not path.startswith("/") or "?" in path or "#" in path:
        return None
    return key[: key.index(":")], plain.group(1), path


def host_of(url: str) -> str:
    """Host name of a URL (no port): the unit of politeness and of partitioning.

    Read straight from a URL in canonical form (crawldb keys, normalized links: most
    calls, about a fifth of the parser's cost); parsed otherwise."""
    plain = _plain_host(url)
    if plain is None:
        return URL(url).hostname  # the parser checks punycode and ports
    return plain.group(1)


def _plain_host(url: str) -> re.Match[str] | None:
    """``_PLAIN_HOST``'s match when the parser would keep the host and port as written."""
    plain = _PLAIN_HOST.match(url)
    if plain is None or "xn--" in plain.group(1) or int(plain.group(2) or 0) > 65535:
        return None
    return plain


def scheme_of(url: str) -> str:
    """Scheme of a URL without the colon, in lower case. Read straight from a URL that
    starts ``http://`` or ``https://`` (every URL the fetcher queues); parsed otherwise."""
    if url.startswith(("http://", "https://")):
        return url[: url.index(":")]
    return URL(url).protocol.rstrip(":")


def _canonical_escapes(text: str) -> str:
    """Decode escapes of unreserved characters and upper-case the hex digits of the rest."""

    def fix(match: re.Match[str]) -> str:
        byte = int(match.group(1), 16)
        if byte in _UNRESERVED:
            return chr(byte)
        return "%" + match.group(1).upper()

    return _PERCENT_ESCAPE.sub(fix, text)
