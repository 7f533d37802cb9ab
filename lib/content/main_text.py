"""A parse filter (``parse.filters``): the main text of an article, beside the visible
text (``metadata["main_text"]``), by resiliparse's main-content extraction, which drops
navigation, headers, footers and link lists by their markup and link density."""

from __future__ import annotations

from typing import Any

MAX_CHARS = 100_000  # the main text kept, at most


class MainText:
    """Adds ``main_text`` to an HTML page's metadata."""

    def filter(self, url: str, page: dict[str, Any]) -> dict[str, str]:
        """The page's main text, or nothing for a page that is not HTML."""
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.encoding import bytes_to_str

        kind = (page.get("content_type") or "text/html").split(";")[0].strip().lower()
        if kind not in ("text/html", "application/xhtml+xml") or not page.get("body"):
            return {}
        html = bytes_to_str(page["body"])
        text = extract_plain_text(html, main_content=True)
        return {"main_text": " ".join(text.split())[:MAX_CHARS]}
