"""A parse filter (``parse.filters``): the main text of an article, beside the visible
text (``metadata["main_text"]``), by the extractor ``parse.main_text.extractor`` names:
resiliparse's main-content extraction or trafilatura's, which drop navigation, headers,
footers, comments and link lists by their markup and link density. The default is the
one ``tests/benchmarks/bench_main_text.py`` measured better (docs/benchmarks.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lib.config import ConfigError

MAX_CHARS = 100_000  # the main text kept, at most
HTML_TYPES = ("text/html", "application/xhtml+xml")


def resiliparse_text(url: str, body: bytes) -> str:
    """The page's main content by resiliparse (its encoding guessed from the bytes)."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str

    return extract_plain_text(bytes_to_str(body), main_content=True)


def trafilatura_text(url: str, body: bytes) -> str:
    """The page's main content by trafilatura (comments left out, tables kept)."""
    import trafilatura

    return trafilatura.extract(body, url=url, include_comments=False) or ""


EXTRACTORS: dict[str, Callable[[str, bytes], str]] = {
    "resiliparse": resiliparse_text,
    "trafilatura": trafilatura_text,
}


class MainText:
    """Adds ``main_text`` to an HTML page's metadata."""

    def __init__(self, extractor: str):
        if extractor not in EXTRACTORS:
            known = ", ".join(EXTRACTORS)
            raise ConfigError(f"parse.main_text.extractor must be one of {known}: {extractor!r}")
        self.extract = EXTRACTORS[extractor]

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> MainText:
        """The filter of a task."""
        return cls(conf["parse.main_text.extractor"])

    def filter(self, url: str, page: dict[str, Any]) -> dict[str, str]:
        """The page's main text, or nothing for a page that is not HTML."""
        kind = (page.get("content_type") or "text/html").split(";")[0].strip().lower()
        if kind not in HTML_TYPES or not page.get("body"):
            return {}
        return {"main_text": " ".join(self.extract(url, page["body"]).split())[:MAX_CHARS]}
