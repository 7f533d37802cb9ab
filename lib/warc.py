"""WARC output of the fetcher, through warcio (WARC/1.1, one gzip member per record).

A ``WarcFile`` is written under a temporary name and renamed when closed, so that a
reader (or a retried Spark task, which rewrites the same name) never sees half a file.
It writes through a ``lib.storage`` storage: a local file, or a WebHDFS stream (the
records go to the DataNode as they are written; nothing waits in memory for the end).
Each file opens with a ``warcinfo`` record; each exchange that got an answer adds a
``request`` and a ``response`` record, linked by ``WARC-Concurrent-To``, with block and
payload digests; a 304 answer to a conditional request is a ``revisit`` record (profile
``server-not-modified``, headers only) instead of a response, as Heritrix writes it.
The response body is stored as received (still content-encoded); since the de-chunked
body is stored, ``Transfer-Encoding`` is renamed
``X-Crawler-Transfer-Encoding`` as Common Crawl does, and a body cut at the content
limit is marked ``WARC-Truncated: length``.

Each file also yields its CDXJ index (pywb's format, as cdxj-indexer writes it), built
while writing from the records' known offsets rather than by reading the file again.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from datetime import UTC, datetime
from urllib.parse import urlsplit

import surt
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from lib.http import Exchange
from lib.storage import LocalStorage, Storage, basename

_RENAMED_HEADERS = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}
_MIME_END = re.compile(r"[;\s]")
# WARC 1.1 section 6.7.3: a 304 to a conditional request, stored as headers only.
REVISIT_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


def warc_date(epoch_seconds: float) -> str:
    """ISO 8601 UTC date with microseconds, as WARC/1.1 allows."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class WarcFile:
    """One WARC file being written; ``close()`` makes it visible under its final name."""

    def __init__(
        self,
        path: str,
        info: dict[str, str],
        attempt: int = 0,
        storage: Storage | None = None,
    ):
        self.path = path
        self.name = basename(path)
        self.storage = storage or LocalStorage()
        # One temporary file per task attempt: attempts never write into each other.
        self.temp_path = f"{path}.inprogress-{attempt}"
        self._opened = self.storage.open_write(self.temp_path)
        self._handle = _CountingWriter(self._opened.__enter__())
        self._writer = WARCWriter(self._handle, gzip=True, warc_version="WARC/1.1")
        self._index: list[str] = []
        record = self._writer.create_warcinfo_record(self.name, info)
        self._writer.write_record(record)

    def write_exchange(self, exchange: Exchange) -> int:
        """Write the request and response records; returns the response record's offset."""
        date = warc_date(exchange.started)
        not_modified = exchange.status == 304
        response_headers = StatusAndHeaders(
            f"{exchange.status} {exchange.reason_phrase}".strip(),
            _stored_headers(exchange.response_headers),
            protocol="HTTP/1.1",
        )
        response = self._record(
            exchange.url,
            "revisit" if not_modified else "response",
            response_headers,
            exchange.raw_body,
            _response_warc_headers(date, exchange),
        )
        request_headers = StatusAndHeaders(
            f"GET {_request_target(exchange.url)} HTTP/1.1",
            list(exchange.request_headers),
            is_http_request=True,
        )
        request = self._record(
            exchange.url,
            "request",
            request_headers,
            b"",
            {
                "WARC-Date": date,
                "WARC-Concurrent-To": response.rec_headers.get_header("WARC-Record-ID"),
            },
        )
        offset = self._handle.tell()
        self._writer.write_record(response)
        length = self._handle.tell() - offset
        self._index.append(_cdxj_line(response, offset, length, self.name, date))
        self._writer.write_record(request)
        return offset

    def _record(self, url: str, kind: str, http_headers, payload: bytes, warc_headers: dict):
        """A record with its digests given: warcio would otherwise copy the payload
        through its digesters and temporary buffers, which was most of the fetcher's
        CPU. The digests are warcio's own: the block is the HTTP head and the payload,
        and a revisit record has no payload digest."""
        http_headers.compute_headers_buffer(None)
        block = hashlib.sha1(http_headers.headers_buff)
        block.update(payload)
        warc_headers["WARC-Block-Digest"] = _sha1_label(block)
        if kind != "revisit":
            warc_headers["WARC-Payload-Digest"] = _sha1_label(hashlib.sha1(payload))
        return self._writer.create_warc_record(
            url,
            kind,
            payload=io.BytesIO(payload),
            length=len(payload),
            http_headers=http_headers,
            warc_headers_dict=warc_headers,
        )

    def cdxj(self) -> str:
        """The CDXJ index of the records written so far: one line per response and revisit
        record, ``SURT timestamp {json}`` with the URL, MIME type, status, payload
        digest, record length and offset, and the file name; sorted."""
        return "".join(sorted(self._index))

    def close(self) -> None:
        """Flush and move the file to its final name."""
        self._opened.__exit__(None, None, None)
        self.storage.rename(self.temp_path, self.path)

    def abort(self) -> None:
        """Drop the unfinished file."""
        try:
            self._opened.__exit__(None, None, None)
        finally:
            self.storage.delete(self.temp_path)


class _CountingWriter:
    """A write-only stream that knows its offset (a WebHDFS upload cannot ``tell()``)."""

    def __init__(self, raw):
        self.raw = raw
        self.offset = 0

    def write(self, data) -> int:
        self.raw.write(data)
        self.offset += len(data)
        return len(data)

    def tell(self) -> int:
        return self.offset

    def flush(self) -> None:
        """Flushed when the file is closed."""


def _sha1_label(digest) -> str:
    return "sha1:" + base64.b32encode(digest.digest()).decode("ascii")


def _stored_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(_RENAMED_HEADERS.get(k.lower(), k), v) for k, v in headers]


def _response_warc_headers(date: str, exchange: Exchange) -> dict[str, str]:
    headers = {"WARC-Date": date}
    if exchange.status == 304:
        headers["WARC-Profile"] = REVISIT_NOT_MODIFIED
    if exchange.truncated:
        headers["WARC-Truncated"] = "length"
    return headers


def _request_target(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _cdxj_line(record, offset: int, length: int, filename: str, date: str) -> str:
    """The CDXJ line of a written response or revisit record, field for field what
    cdxj-indexer writes for it (its tests compare the two)."""
    url = record.rec_headers.get_header("WARC-Target-URI")
    fields = {"url": url}
    if record.rec_type == "revisit":
        fields["mime"] = "warc/revisit"
    else:
        content_type = record.http_headers.get_header("content-type")
        if content_type is not None:
            fields["mime"] = _MIME_END.split(content_type, 1)[0].strip()
    fields["status"] = record.http_headers.get_statuscode()
    digest = record.rec_headers.get_header("WARC-Payload-Digest")
    if digest is not None:
        fields["digest"] = digest
    fields |= {"length": str(length), "offset": str(offset), "filename": filename}
    try:
        key = surt.surt(url)
    except Exception:  # noqa: BLE001 - cdxj-indexer falls back to the URL the same way
        key = url
    # The record's WARC-Date, 2026-11-30T13:00:00.123456Z, as 20261130130000.
    timestamp = date[0:4] + date[5:7] + date[8:10] + date[11:13] + date[14:16] + date[17:19]
    return f"{key} {timestamp} {json.dumps(fields)}\n"
