"""RSS and Atom feeds (``application/rss+xml``, ``application/atom+xml`` in
``parse.plugins``), with feedparser: each entry's link becomes an outlink, so that a
site's new articles are found from its feed, with the entry's date (``updated``, else
``published``) in the outlink's metadata, which updatedb reads as a sitemap's lastmod
(a known article updated since its fetch is due at once); the feed's title and its
entries' titles and summaries are its text."""

from __future__ import annotations

import calendar
import time
from collections.abc import Mapping
from typing import Any

ENTRY_UPDATED = "updated"  # the outlink metadata key of an entry's date, ISO 8601 UTC
_ISO_UTC = "%Y-%m-%dT%H:%M:%SZ"


class FeedParser:
    """A feed's title, entry links (with their titles as anchors and dates) and text."""

    def parse(self, url: str, body: bytes, content_type, headers) -> dict[str, Any]:
        """The feed's fields (``lib.plugins``); raises when it is not a feed."""
        import feedparser

        parsed = feedparser.parse(body, response_headers={"content-location": url})
        if parsed.bozo and not parsed.entries:
            raise ValueError(f"not a feed: {parsed.bozo_exception}")
        entries = parsed.entries
        text = " ".join(
            part for entry in entries for part in (entry.get("title"), entry.get("summary")) if part
        )
        dates = [_entry_date(entry) for entry in entries]
        outlinks = [
            (entry["link"], entry.get("title") or "", _date_metadata(date))
            for entry, date in zip(entries, dates, strict=True)
            if entry.get("link")
        ]
        newest = max((d for d in dates if d), default=None)
        return {
            "title": parsed.feed.get("title"),
            "text": text,
            "outlinks": outlinks,
            "language": parsed.feed.get("language"),
            "metadata": {
                "feed_entries": str(len(entries)),
                "feed_updated": time.strftime(_ISO_UTC, newest) if newest else "",
            },
        }


def _entry_date(entry: dict) -> time.struct_time | None:
    """An entry's updated date, else its published one (read as stored: feedparser's
    ``get`` maps one to the other, with a warning)."""
    return dict.get(entry, "updated_parsed") or dict.get(entry, "published_parsed")


def _date_metadata(date: time.struct_time | None) -> dict[str, str]:
    """An entry's outlink metadata: its date (feedparser gives it in UTC), if any."""
    return {ENTRY_UPDATED: time.strftime(_ISO_UTC, date)} if date else {}


def entry_updated_ms(metadata: Mapping[str, str] | None) -> int | None:
    """The entry date an outlink's metadata carries, in epoch ms, or None."""
    value = (metadata or {}).get(ENTRY_UPDATED)
    if not value:
        return None
    try:
        return calendar.timegm(time.strptime(value, _ISO_UTC)) * 1000
    except ValueError:  # a plugin's own metadata under the same key
        return None
