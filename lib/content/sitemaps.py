"""Sitemaps (sitemaps.org protocol 0.9): URL sets, sitemap indexes, gzip, plain text.

``parse_sitemap`` never raises on bad input: a document it cannot read is returned with
``kind="invalid"`` and a reason. Limits: the decompressed document is cut at ``limit``
bytes (a gzip bomb cannot exhaust memory) and at most ``MAX_ENTRIES`` entries are read,
the protocol's maximum per file. Entities are never resolved and nothing is fetched
while parsing. Only what the protocol allows is kept: ``loc`` on the sitemap's own host
(others are counted as ``off_host``), ``lastmod`` as epoch ms, ``changefreq`` as seconds,
``priority`` clamped to [0, 1].
"""

from __future__ import annotations

import io
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from lxml import etree

from lib.url.normalize import host_of, resolve

MAX_ENTRIES = 50_000  # per sitemap file, by the protocol
CHANGEFREQ_SECONDS = {
    "always": 3_600,  # re-fetching more often than hourly is not polite
    "hourly": 3_600,
    "daily": 86_400,
    "weekly": 604_800,
    "monthly": 2_592_000,
    "yearly": 31_536_000,
    "never": 31_536_000,
}
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class SitemapEntry:
    """One ``<url>`` of a URL set, or one ``<sitemap>`` of an index."""

    loc: str
    lastmod_ms: int | None = None
    changefreq_s: int | None = None
    priority: float | None = None


@dataclass
class Sitemap:
    """A parsed sitemap document."""

    kind: str  # urlset, index, text, invalid
    entries: list[SitemapEntry] = field(default_factory=list)
    reason: str | None = None
    dropped: Counter = field(default_factory=Counter)


def parse_sitemap(url: str, body: bytes, limit: int) -> Sitemap:
    """Parse a sitemap fetched from ``url`` (XML or plain text, gzipped or not)."""
    try:
        data = gunzip_bounded(body, limit) if body[:2] == _GZIP_MAGIC else body[:limit]
    except zlib.error as exc:
        return Sitemap("invalid", reason=f"gzip: {exc}")
    if not data.lstrip()[:1] == b"<":
        return _text_sitemap(url, data)
    try:
        return _xml_sitemap(url, data)
    except etree.LxmlError as exc:
        return Sitemap("invalid", reason=f"xml: {str(exc)[:200]}")


def gunzip_bounded(body: bytes, limit: int) -> bytes:
    """Decompress gzip data, keeping at most ``limit`` bytes of output."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    return inflater.decompress(body, limit)


def _xml_sitemap(url: str, data: bytes) -> Sitemap:
    parser_options = {"resolve_entities": False, "no_network": True, "recover": True}
    events = etree.iterparse(io.BytesIO(data), events=("end",), **parser_options)
    result = Sitemap("invalid", reason="no urlset or sitemapindex")
    fields: dict[str, str] = {}
    for _, element in events:
        name = etree.QName(element).localname if isinstance(element.tag, str) else ""
        if name in ("loc", "lastmod", "changefreq", "priority"):
            fields[name] = (element.text or "").strip()
        elif name in ("url", "sitemap"):
            _add_entry(result, url, fields, index=name == "sitemap")
            fields = {}
            element.clear()
        elif name in ("urlset", "sitemapindex"):
            result.kind = "urlset" if name == "urlset" else "index"
            result.reason = None
        if len(result.entries) >= MAX_ENTRIES:
            result.dropped["over_limit"] += 1
            break
    return result


def _add_entry(result: Sitemap, sitemap_url: str, fields: dict[str, str], index: bool) -> None:
    loc = resolve(fields.get("loc", ""), sitemap_url) if fields.get("loc") else None
    if loc is None:
        result.dropped["no_loc"] += 1
        return
    if host_of(loc) != host_of(sitemap_url):
        result.dropped["off_host"] += 1  # the protocol: a sitemap lists its own host only
        return
    entry = SitemapEntry(loc, lastmod_ms=parse_lastmod(fields.get("lastmod")))
    if not index:
        entry.changefreq_s = CHANGEFREQ_SECONDS.get(fields.get("changefreq", "").lower())
        entry.priority = _priority(fields.get("priority"))
    result.entries.append(entry)


def _text_sitemap(url: str, data: bytes) -> Sitemap:
    result = Sitemap("text")
    for line in data.decode("utf-8", errors="replace").splitlines()[:MAX_ENTRIES]:
        line = line.strip()
        if line:
            _add_entry(result, url, {"loc": line}, index=False)
    return result


def parse_lastmod(text: str | None) -> int | None:
    """A W3C datetime (``2026-01-31``, ``2026-01-31T10:00Z``, ``...+02:00``) as epoch ms."""
    if not text:
        return None
    value = text.strip().replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _priority(text: str | None) -> float | None:
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return None if value is None else min(1.0, max(0.0, value))
