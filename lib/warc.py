"""WARC output of the fetcher (WARC/1.1, one gzip member per record).

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

The records are serialised here, not by warcio's writer: a record is a few header lines,
the HTTP head and the payload, and warcio's record objects, header classes and stream
wrappers cost about half of the fetcher's CPU per page. The bytes are the ones warcio
writes (the same header lines and digests; a non-ASCII HTTP header is %-encoded by
warcio's own rule); the tests read every record back with warcio, digests checked.

Each file also yields its CDXJ index (pywb's format, as cdxj-indexer writes it), built
while writing from the records' known offsets rather than by reading the file again.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from urllib.parse import urlsplit

from isal import isal_zlib
from warcio.statusandheaders import StatusAndHeaders

from lib.cdx_keys import SurtKeys
from lib.http import Exchange
from lib.storage import LocalStorage, Storage, basename
from lib.warc_fields import record_id, sha1_label, warc_date

_RENAMED_HEADERS = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}
_MIME_END = re.compile(r"[;\s]")
# WARC 1.1 section 6.7.3: a 304 to a conditional request, stored as headers only.
REVISIT_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
# ISA-L (Intel's igzip) at its highest level, 3: standard gzip members, 1.4 % larger
# than zlib's level 6 for a 4.5 KB page at 37 % of its CPU (30 against 80 µs through
# zlib-ng here); the records' compression was the largest part of the fetcher's CPU.
_GZIP_LEVEL = 3
_GZIP_WBITS = 16 + 15  # a gzip member, 32 KiB window
_RECORD_END = b"\r\n\r\n"


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
        self._index: list[str] = []
        self._keys = SurtKeys()
        fields = "".join(f"{key}: {value}\r\n" for key, value in info.items()).encode("utf-8")
        warc_headers = [
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", record_id()),
            ("WARC-Filename", self.name),
            ("WARC-Date", warc_date(time.time())),
            ("Content-Type", "application/warc-fields"),
            ("WARC-Block-Digest", sha1_label(hashlib.sha1(fields))),
        ]
        self._write_record(warc_headers, b"", fields)

    def write_exchange(self, exchange: Exchange) -> int:
        """Write the request and response records; returns the response record's offset."""
        date = warc_date(exchange.started)
        kind = "revisit" if exchange.status == 304 else "response"
        status_line = f"HTTP/1.1 {exchange.status} {exchange.reason_phrase}".strip()
        head = _http_head(status_line, _stored_headers(exchange.response_headers))
        payload = exchange.raw_body
        response_id = record_id()
        warc_headers = _record_head(kind, response_id, date, exchange)
        warc_headers.append(("Content-Type", "application/http; msgtype=response"))
        if kind == "revisit":
            warc_headers.append(("WARC-Profile", REVISIT_NOT_MODIFIED))
        else:
            warc_headers.append(("WARC-Payload-Digest", sha1_label(hashlib.sha1(payload))))
        if exchange.truncated:
            warc_headers.append(("WARC-Truncated", "length"))
        block = hashlib.sha1(head)
        block.update(payload)
        warc_headers.append(("WARC-Block-Digest", sha1_label(block)))
        offset = self._handle.tell()
        self._write_record(warc_headers, head, payload)
        length = self._handle.tell() - offset
        self._index.append(
            _cdxj_line(exchange, kind, warc_headers, offset, length, self.name, date, self._keys)
        )
        request_line = f"GET {_request_target(exchange.url)} HTTP/1.1"
        request_head = _http_head(request_line, list(exchange.request_headers))
        request_headers = _record_head("request", record_id(), date, exchange) + [
            ("WARC-Concurrent-To", response_id),
            ("Content-Type", "application/http; msgtype=request"),
            ("WARC-Payload-Digest", _EMPTY_SHA1),
            ("WARC-Block-Digest", sha1_label(hashlib.sha1(request_head))),
        ]
        self._write_record(request_headers, request_head, b"")
        return offset

    def _write_record(self, warc_headers: list[tuple[str, str]], head: bytes, payload: bytes):
        """One record as one gzip member: WARC header lines, the block, two CRLFs."""
        lines = "".join(f"{name}: {value}\r\n" for name, value in warc_headers)
        length = len(head) + len(payload)
        intro = f"WARC/1.1\r\n{lines}Content-Length: {length}\r\n\r\n".encode()
        record = b"".join((intro, head, payload, _RECORD_END))
        self._handle.write(isal_zlib.compress(record, _GZIP_LEVEL, _GZIP_WBITS))

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


def _record_head(kind: str, record_id: str, date: str, exchange: Exchange) -> list:
    """The WARC header fields every record of an exchange starts with."""
    head = [
        ("WARC-Type", kind),
        ("WARC-Record-ID", record_id),
        ("WARC-Date", date),
        ("WARC-Target-URI", exchange.url),
    ]
    if exchange.peer:
        head.append(("WARC-IP-Address", exchange.peer))
    return head


def _http_head(first_line: str, headers: list[tuple[str, str]]) -> bytes:
    """The HTTP head as stored: ASCII, or warcio's %-encoding of non-ASCII values."""
    text = first_line + "\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers)
    try:
        return text.encode("ascii") + b"\r\n"
    except UnicodeEncodeError:
        protocol, _, rest = first_line.partition(" ")
        if protocol.startswith("HTTP/"):  # a status line: warcio keeps the protocol apart
            return StatusAndHeaders(rest, headers, protocol=protocol).to_ascii_bytes()
        return StatusAndHeaders(first_line, headers, is_http_request=True).to_ascii_bytes()


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


_EMPTY_SHA1 = sha1_label(hashlib.sha1(b""))


def _stored_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(_RENAMED_HEADERS.get(k.lower(), k), v) for k, v in headers]


def _request_target(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _cdxj_line(
    exchange: Exchange,
    kind: str,
    warc_headers: list[tuple[str, str]],
    offset: int,
    length: int,
    filename: str,
    date: str,
    keys: SurtKeys,
) -> str:
    """The CDXJ line of a written response or revisit record, field for field what
    cdxj-indexer writes for it (its tests compare the two)."""
    url = exchange.url
    fields = {"url": url}
    if kind == "revisit":
        fields["mime"] = "warc/revisit"
    else:
        content_type = exchange.header("content-type")
        if content_type is not None:
            fields["mime"] = _MIME_END.split(content_type, 1)[0].strip()
    fields["status"] = str(exchange.status)
    digest = dict(warc_headers).get("WARC-Payload-Digest")
    if digest is not None:
        fields["digest"] = digest
    fields |= {"length": str(length), "offset": str(offset), "filename": filename}
    key = keys.key(url)
    # The record's WARC-Date, 2026-11-30T13:00:00.123456Z, as 20261130130000.
    timestamp = date[0:4] + date[5:7] + date[8:10] + date[11:13] + date[14:16] + date[17:19]
    return f"{key} {timestamp} {json.dumps(fields)}\n"
