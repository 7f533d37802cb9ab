"""Exporters of parsed documents (``export.plugins``, ``lib.plugins``): what a task
gives them, and the two shipped, JSON Lines and Parquet files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lib import plugins

DOCUMENT_FIELDS = (
    "url",
    "fetch_status",
    "http_status",
    "fetched_at",
    "content_type",
    "parse_status",
    "title",
    "text",
    "language",
    "description",
    "metadata",
    "content_hash",
    "simhash",
    "outlinks",
)


class ExportFailed(RuntimeError):
    """An exporter raised: the task fails, naming it (a rerun exports again)."""


def documents(fetched: Sequence[Mapping], parsed: Sequence[Mapping]) -> list[dict[str, Any]]:
    """One document per page: its fetch row's and parse row's fields an exporter gets
    (``fetched_at`` in epoch ms; outlinks as URLs)."""
    made = []
    for fetch, parse in zip(fetched, parsed, strict=True):
        made.append(
            {
                "url": parse["url"],
                "fetch_status": fetch.get("fetch_status"),
                "http_status": fetch.get("http_status"),
                "fetched_at": _millis(fetch.get("fetched_at")),
                "content_type": fetch.get("content_type"),
                "parse_status": parse["parse_status"],
                "title": parse["title"],
                "text": parse["text"],
                "language": parse["language"],
                "description": parse["description"],
                "metadata": dict(parse["metadata"] or {}),
                "content_hash": parse["content_hash"],
                "simhash": parse["simhash"],
                "outlinks": [link[0] for link in parse["outlinks"] or ()],
            }
        )
    return made


def _millis(moment) -> int | None:
    """Epoch milliseconds of a fetch time (the fetcher's int, or a table's datetime)."""
    if moment is None or isinstance(moment, int):
        return moment
    return int(moment.timestamp() * 1000)


class Exports:
    """A task's exporters: each given every batch of documents, then closed."""

    def __init__(self, conf: Mapping[str, Any]):
        paths = list(conf.get("export.plugins") or ())
        self.exporters = [(path, plugins.instance("export.plugins", path, conf)) for path in paths]

    def export(self, batch: list[dict[str, Any]]) -> None:
        """Give the batch to every exporter; ``ExportFailed`` names the one that raised."""
        for path, exporter in self.exporters:
            try:
                exporter.export(batch)
            except Exception as exc:
                raise ExportFailed(f"export plugin {path} failed: {exc}") from exc

    def close(self) -> None:
        """The task's documents are all given: exporters with ``close()`` finish."""
        for path, exporter in self.exporters:
            if hasattr(exporter, "close"):
                try:
                    exporter.close()
                except Exception as exc:
                    raise ExportFailed(f"export plugin {path} failed: {exc}") from exc
