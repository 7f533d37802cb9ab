"""RSS and Atom feeds (``application/rss+xml``, ``application/atom+xml`` in
``parse.plugins``), with feedparser: each entry's link becomes an outlink, so that a
site's new articles are found from its feed; the feed's title and its entries' titles
and summaries are its text."""

from __future__ import annotations

import time
from typing import Any


class FeedParser:
    """A feed's title, entry links (with their titles as anchors) and text."""

    def parse(self, url: str, body: bytes, content_type, headers) -> dict[str, Any]:
        """The feed's fields (``lib.plugins``); raises when it is not a feed."""
        import feedparser

        parsed = feedparser.parse(body, response_headers={"content-location": url})
        if parsed.bozo and not parsed.entries:
            raise ValueError(f"not a feed: {parsed.bozo_exception}")
        entries = parsed.entries
        links = [(entry.get("link"), entry.get("title") or "") for entry in entries]
        text = " ".join(
            part for entry in entries for part in (entry.get("title"), entry.get("summary")) if part
        )
        dates = [entry.get("updated_parsed") or entry.get("published_parsed") for entry in entries]
        newest = max((d for d in dates if d), default=None)
        return {
            "title": parsed.feed.get("title"),
            "text": text,
            "outlinks": [(link, anchor) for link, anchor in links if link],
            "language": parsed.feed.get("language"),
            "metadata": {
                "feed_entries": str(len(entries)),
                "feed_updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", newest) if newest else "",
            },
        }
