"""SURT keys of the CDXJ index (``surt.surt``'s, exactly), with its work done once per
host: the ``surt`` package parses, unescapes, normalises and re-escapes every URL, most
of the index's cost; a plain URL here costs a small fraction of that.

A URL whose path is plain -- letters, digits, ``-._~/``, no empty, ``.`` or ``..``
segment, no query or fragment -- has a SURT key that is its origin's key followed by its
path lowercased, less a trailing slash: what ``surt`` does to such a path (nothing in
it to unescape, resolve, or take for a session ID). Any other URL goes through ``surt``.
"""

from __future__ import annotations

import re

import surt

# scheme://host[:port] (an ASCII name or IPv4 address) and a plain path (see above)
_PLAIN = re.compile(r"(https?://[A-Za-z0-9.:-]+)(/[A-Za-z0-9._~/-]*)\Z")
_ODD_SEGMENT = re.compile(r"//|/\.\.?(?:/|\Z)")
# Origins kept at most: a partition's hosts, bounded against a list of countless hosts.
MAX_ORIGINS = 10_000


class SurtKeys:
    """``key(url)``: the URL's SURT key, as ``surt.surt(url)`` gives it."""

    def __init__(self):
        self._origins: dict[str, str] = {}

    def key(self, url: str) -> str:
        """The SURT key of ``url`` (the URL itself where ``surt`` cannot parse it)."""
        plain = _PLAIN.match(url)
        if plain is None or _ODD_SEGMENT.search(plain[2]):
            return _surt(url) or url
        origin, path = plain[1], plain[2].lower()
        prefix = self._origins.get(origin)
        if prefix is None:
            if len(self._origins) >= MAX_ORIGINS:
                self._origins.clear()
            key = _surt(origin + "/")
            prefix = self._origins[origin] = key.removesuffix("/") if key else ""
        if not prefix:  # surt fails on the origin (a bad port): on the URL too
            return _surt(url) or url
        if len(path) > 1 and path.endswith("/"):
            path = path[:-1]
        return prefix + path


def _surt(url: str) -> str | None:
    """``surt.surt(url)``, or None where it fails: cdxj-indexer then keys by the URL."""
    try:
        return surt.surt(url)
    except Exception:  # noqa: BLE001 - any failure of surt's parsing
        return None
