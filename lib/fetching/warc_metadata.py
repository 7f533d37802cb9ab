"""What a fetch task writes in a WARC ``metadata`` record about a page it archived
(``warc.metadata.records``): Heritrix's fields, so that tools which read its crawl logs
from the archive (the time of the fetch, the hops from the seed, the outlinks) read
Trawl's the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lib.content.parse import followable_links
from lib.exchange import Exchange
from lib.url.filter import UrlFilter


def metadata_fields(
    row: Mapping[str, Any], exchange: Exchange, conf: Mapping[str, Any], url_filter: UrlFilter
) -> list[tuple[str, str]]:
    """The fields of one page's metadata record: ``fetchTimeMs``, ``hopsFromSeed`` (its
    link depth), ``origin`` (how the fetch task came to it), ``truncated`` (``length``
    or ``time``) when the body was cut, and one ``outlink`` per link of an HTML page,
    as parse keeps them (normalized, filtered)."""
    fields = [
        ("fetchTimeMs", str(exchange.duration_ms)),
        ("hopsFromSeed", str(row["depth"])),
        ("origin", row["origin"]),
    ]
    if exchange.truncated:
        fields.append(("truncated", "length" if exchange.cut_at_size else "time"))
    if exchange.status == 200:
        headers = {"x-robots-tag": exchange.header("X-Robots-Tag")}
        content_type = exchange.header("Content-Type")
        links = followable_links(row["url"], exchange.body, content_type, headers, conf, url_filter)
        fields += [("outlink", url) for url in links]
    return fields
