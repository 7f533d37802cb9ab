"""Reading one capture back from a WARC file, at the offset the fetch table recorded."""

from __future__ import annotations

from warcio.archiveiterator import ArchiveIterator


def read_payload(path: str, offset: int) -> bytes:
    """The HTTP payload of the record at ``offset`` in the WARC file at ``path``, with its
    Content-Encoding undone (as a browser would see it)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        record = next(iter(ArchiveIterator(handle)))
        return record.content_stream().read()
