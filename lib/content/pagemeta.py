"""Page metadata from an lxml document: description, language, canonical URL, feeds and
sitemaps it advertises. Plain functions; URLs come back resolved and normalized."""

from __future__ import annotations

import re
from collections.abc import Mapping

from lib.url.filter import UrlFilter, clean
from lib.url.normalize import resolve

_LINK_HEADER = re.compile(r"<([^>]*)>\s*;([^,]*)")
_FEED_TYPES = ("application/rss+xml", "application/atom+xml", "application/feed+json")
DESCRIPTION_LIMIT = 1000


def description(doc) -> str | None:
    """``<meta name="description">``, whitespace folded."""
    for meta in doc.iter("meta"):
        if (meta.get("name") or "").strip().lower() == "description":
            text = " ".join((meta.get("content") or "").split())
            return text[:DESCRIPTION_LIMIT] or None
    return None


def language(doc, headers: Mapping[str, str]) -> str | None:
    """``<html lang>``, else the first Content-Language, lower case."""
    declared = doc.get("lang") or doc.get("{http://www.w3.org/XML/1998/namespace}lang")
    if not declared:
        declared = (headers.get("content-language") or "").split(",")[0]
    return declared.strip().lower() or None


def canonical(doc, headers: Mapping[str, str], base: str, url_filter: UrlFilter) -> str | None:
    """The canonical URL: ``<link rel=canonical>``, else the HTTP ``Link`` header's."""
    for link in doc.iter("link"):
        if "canonical" in (link.get("rel") or "").lower().split() and link.get("href"):
            return _clean(link.get("href"), base, url_filter)
    for target, params in _LINK_HEADER.findall(headers.get("link") or ""):
        if re.search(r"rel\s*=\s*\"?canonical", params, re.I):
            return _clean(target, base, url_filter)
    return None


def advertised(doc, base: str, url_filter: UrlFilter) -> list[str]:
    """Feeds (``<link rel=alternate>`` of a feed type) and sitemaps (``rel=sitemap``)."""
    found = []
    for link in doc.iter("link"):
        rel = (link.get("rel") or "").lower().split()
        kind = (link.get("type") or "").lower()
        if ("alternate" in rel and kind in _FEED_TYPES) or "sitemap" in rel:
            target = _clean(link.get("href") or "", base, url_filter)
            if target and target not in found:
                found.append(target)
    return found


def _clean(href: str, base: str, url_filter: UrlFilter) -> str | None:
    absolute = resolve(href, base)
    return clean(absolute, url_filter, resolved=True)[0] if absolute else None
