"""PDF pages (``application/pdf`` in ``parse.plugins``): their text, title and links,
with pypdf (pure Python). A PDF cut at ``http.content.limit`` is not parsed: the fetch
task records it ``not_parsed``, reason ``truncated`` (engine.executors.task_parse)."""

from __future__ import annotations

import io
from typing import Any

MAX_PAGES = 200  # pages read from one PDF: its text is long enough for the fingerprints


class PdfParser:
    """Text of every page (up to ``MAX_PAGES``), the document title, and the URIs of
    its link annotations."""

    def parse(self, url: str, body: bytes, content_type, headers) -> dict[str, Any]:
        """The PDF's fields (``lib.plugins``); raises on a file pypdf cannot read."""
        from pypdf import PdfReader

        reader = PdfReader(io.BytesIO(body))
        pages = reader.pages[:MAX_PAGES]
        text = " ".join((page.extract_text() or "") for page in pages)
        links = [(uri, "") for page in pages for uri in _link_uris(page)]
        title = (reader.metadata or {}).get("/Title") if reader.metadata else None
        return {
            "title": str(title) if title else None,
            "text": " ".join(text.split()),
            "outlinks": links,
            "metadata": {"pdf_pages": str(len(reader.pages))},
        }


def _link_uris(page) -> list[str]:
    """The URIs of a page's link annotations (``/A /URI``)."""
    uris = []
    for annotation in page.get("/Annots") or ():
        action = annotation.get_object().get("/A")
        uri = action.get_object().get("/URI") if action is not None else None
        if uri:
            uris.append(str(uri))
    return uris
