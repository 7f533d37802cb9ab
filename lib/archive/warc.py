"""WARC output of the fetcher (WARC/1.1, one gzip member per record).

A ``WarcFile`` is written under a temporary name and renamed when closed, so that a
reader (or a retried Spark task, which rewrites the same name) never sees half a file.
It writes through a ``lib.storage`` storage: a local file, or a WebHDFS stream (the
records go to the DataNode as they are written; nothing waits in memory for the end).
Each file opens with a ``warcinfo`` record; each exchange that got an answer adds a
``request`` and a ``response`` record, linked by ``WARC-Concurrent-To``, with block and
payload digests; a 304 answer to a conditional request is a ``revisit`` record (profile
``server-not-modified``, headers only) instead of a response, as Heritrix writes it, and so
is a 200 whose payload is the one archived before (profile ``identical-payload-digest``,
naming the earlier capture's URI and date) when the caller gives that capture.
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
from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import urlsplit

from isal import isal_zlib
from warcio.statusandheaders import StatusAndHeaders

from lib.archive.cdx_keys import SurtKeys
from lib.archive.warc_fields import record_id, sha1_label, warc_date, warc_date_ms
from lib.exchange import Exchange, PriorCapture
from lib.storage import CountingWriter, LocalStorage, Storage, basename

_RENAMED_HEADERS = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}
_MIME_END = re.compile(r"[;\s]")
# WARC 1.1 section 6.7.3: a 304 to a conditional request, stored as headers only.
REVISIT_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
# WARC 1.1 section 6.7.2: a payload archived before, stored as headers only.
REVISIT_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
# ISA-L (Intel's igzip) at its highest level, 3: standard gzip members, a little larger
# than zlib's level 6 for a fraction of its CPU; the records' compression was the
# largest part of the fetcher's CPU (docs/benchmarks.md, bench_fetch).
_GZIP_LEVEL = 3
_GZIP_WBITS = 16 + 15  # a gzip member, 32 KiB window
_RECORD_END = b"\r\n\r\n"


class Written(NamedTuple):
    """Where an exchange's response (or revisit) record went and what it holds."""

    offset: int  # of the record in the file
    kind: str  # response or revisit
    payload_digest: str | None  # the payload's, also for an identical-payload revisit
    record_id: str  # its WARC-Record-ID
    date: str  # its WARC-Date


class WarcFile:
    """One WARC file being written; ``close()`` makes it visible under its final name."""

    def __init__(
        self,
        path: str,
        info: dict[str, str],
        attempt: int = 0,
        storage: Storage | None = None,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = record_id,
    ):
        """``info``: the warcinfo record's fields; ``clock`` (epoch seconds) dates the
        warcinfo record and ``new_id`` makes record IDs: the real ones by default, fixed
        ones in a test that compares a file byte for byte."""
        self.path = path
        self.new_id = new_id
        self.name = basename(path)
        self.storage = storage or LocalStorage()
        # One temporary file per task attempt: attempts never write into each other.
        self.temp_path = f"{path}.inprogress-{attempt}"
        self._opened = self.storage.open_write(self.temp_path)
        self._handle = CountingWriter(self._opened.__enter__())
        self._index: list[str] = []
        self._keys = SurtKeys()
        block = "".join(f"{key}: {value}\r\n" for key, value in info.items()).encode("utf-8")
        self.warcinfo_id = new_id()
        # Every later record names the warcinfo record it belongs to (WARC 1.1, 5.10).
        self._info_field = f"WARC-Warcinfo-ID: {self.warcinfo_id}\r\n"
        fields = (
            f"WARC-Type: warcinfo\r\nWARC-Record-ID: {self.warcinfo_id}\r\n"
            f"WARC-Filename: {self.name}\r\nWARC-Date: {warc_date(clock())}\r\n"
            "Content-Type: application/warc-fields\r\n"
            f"WARC-Block-Digest: {sha1_label(hashlib.sha1(block))}\r\n"
        )
        self._write_record(fields, b"", block)

    def write_exchange(self, exchange: Exchange, prior: PriorCapture | None = None) -> Written:
        """Write the request and response records: the response a revisit of ``prior``
        (the URL's capture archived before) when its payload is the same."""
        date = warc_date_ms(int(exchange.started * 1000))
        status_line = f"HTTP/1.1 {exchange.status} {exchange.reason_phrase}".strip()
        head = _http_head(status_line, _stored_headers(exchange.response_headers))
        response_id = self.new_id()
        # The fields every record of the exchange shares, after its type and ID.
        shared = f"WARC-Date: {date}\r\nWARC-Target-URI: {exchange.url}\r\n{self._info_field}"
        if exchange.peer:
            shared += f"WARC-IP-Address: {exchange.peer}\r\n"
        kind, payload_digest, own = _response_kind(exchange, prior)
        payload = b"" if kind == "revisit" else exchange.raw_body
        headless = exchange.status == 304 and payload_digest is not None
        if headless:
            # No HTTP head: replay tools serve the capture named, its head and payload
            # (pywb serves a revisit holding a 304 head as a bare 304). The 304's own
            # headers are in the segment's fetch table.
            head = b""
        block = hashlib.sha1(head)
        block.update(payload)
        if exchange.truncated:
            own += "WARC-Truncated: length\r\n"
        fields = (
            f"WARC-Type: {kind}\r\nWARC-Record-ID: {response_id}\r\n{shared}"
            f"Content-Type: application/http; msgtype=response\r\n{own}"
            f"WARC-Block-Digest: {sha1_label(block)}\r\n"
        )
        offset = self._handle.tell()
        self._write_record(fields, head, payload)
        length = self._handle.tell() - offset
        self._index.append(
            _cdxj_line(
                exchange,
                kind,
                None if headless else str(exchange.status),
                payload_digest,
                (offset, length, self.name, date),
                self._keys,
            )
        )
        request_line = f"GET {_request_target(exchange.url)} HTTP/1.1"
        request_head = _http_head(request_line, exchange.request_headers)
        fields = (
            f"WARC-Type: request\r\nWARC-Record-ID: {self.new_id()}\r\n{shared}"
            f"WARC-Concurrent-To: {response_id}\r\n"
            "Content-Type: application/http; msgtype=request\r\n"
            f"WARC-Payload-Digest: {_EMPTY_SHA1}\r\n"
            f"WARC-Block-Digest: {sha1_label(hashlib.sha1(request_head))}\r\n"
        )
        self._write_record(fields, request_head, b"")
        return Written(offset, kind, payload_digest, response_id, date)

    def write_metadata(self, url: str, about: Written, fields: list[tuple[str, str]]) -> None:
        """A ``metadata`` record about the response (or revisit) record ``about`` of
        ``url``: ``fields`` as ``name: value`` lines (application/warc-fields), names
        repeated as they come (Heritrix's ``outlink:`` lines)."""
        block = "".join(f"{name}: {_field_value(value)}\r\n" for name, value in fields)
        body = block.encode("utf-8")
        header = (
            f"WARC-Type: metadata\r\nWARC-Record-ID: {self.new_id()}\r\n"
            f"WARC-Date: {about.date}\r\nWARC-Target-URI: {url}\r\n{self._info_field}"
            f"WARC-Concurrent-To: {about.record_id}\r\n"
            "Content-Type: application/warc-fields\r\n"
            f"WARC-Block-Digest: {sha1_label(hashlib.sha1(body))}\r\n"
        )
        self._write_record(header, b"", body)

    def _write_record(self, fields: str, head: bytes, payload: bytes):
        """One record as one gzip member: WARC header lines (``fields``, each ending in
        CRLF, less Content-Length), the block, two CRLFs."""
        length = len(head) + len(payload)
        intro = f"WARC/1.1\r\n{fields}Content-Length: {length}\r\n\r\n".encode()
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


def _response_kind(exchange: Exchange, prior: PriorCapture | None) -> tuple[str, str | None, str]:
    """The record type of an answer, its payload digest and its own header lines: a 304
    is a revisit (server not modified) of ``prior``, the capture it confirms; a whole
    200 whose payload ``prior`` archived already a revisit (identical payload); any
    other a response."""
    if exchange.status == 304:
        if prior is None:  # nothing archived to name: the 304 alone
            return "revisit", None, f"WARC-Profile: {REVISIT_NOT_MODIFIED}\r\n"
        return "revisit", prior.payload_digest, _refers(REVISIT_NOT_MODIFIED, exchange, prior)
    digest = sha1_label(hashlib.sha1(exchange.raw_body))
    own = f"WARC-Payload-Digest: {digest}\r\n"
    same = prior is not None and prior.identical and prior.payload_digest == digest
    if not same or exchange.status != 200 or exchange.truncated:
        return "response", digest, own
    return "revisit", digest, _refers(REVISIT_IDENTICAL, exchange, prior)


def _refers(profile: str, exchange: Exchange, prior: PriorCapture) -> str:
    """A revisit's header lines naming the capture it stands for (WARC 1.1, 6.7): the
    capture's URI, date and record ID, and its payload's digest."""
    return (
        f"WARC-Profile: {profile}\r\nWARC-Refers-To: {prior.record_id}\r\n"
        f"WARC-Refers-To-Target-URI: {exchange.url}\r\n"
        f"WARC-Refers-To-Date: {warc_date_ms(prior.date_ms)}\r\n"
        f"WARC-Payload-Digest: {prior.payload_digest}\r\n"
    )


def _field_value(value: str) -> str:
    """A warc-fields value on one line: line breaks become spaces."""
    return " ".join(str(value).splitlines())


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


_EMPTY_SHA1 = sha1_label(hashlib.sha1(b""))


def _stored_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(_RENAMED_HEADERS.get(k.lower(), k), v) for k, v in headers]


def _request_target(url: str) -> str:
    """The path and query of a URL, as urlsplit gives them (urlsplit's own CPU was a
    fifth of the records'): the common case by hand, any other through urlsplit."""
    if "#" in url or url.endswith("?"):
        parts = urlsplit(url)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    authority = url.find("//") + 2
    ends = [i for i in (url.find("/", authority), url.find("?", authority)) if i >= 0]
    target = url[min(ends) :] if ends else ""
    return target if target.startswith("/") else "/" + target


def _cdxj_line(
    exchange: Exchange,
    kind: str,
    status: str | None,
    payload_digest: str | None,
    place: tuple[int, int, str, str],
    keys: SurtKeys,
) -> str:
    """The CDXJ line of a written response or revisit record, field for field what
    cdxj-indexer writes for it (its tests compare the two): ``status`` None for a
    record without HTTP head; ``place``: its offset, length, file name and WARC-Date."""
    offset, length, filename, date = place
    fields = {"url": exchange.url}
    if kind == "revisit":
        fields["mime"] = "warc/revisit"
    else:
        content_type = exchange.header("content-type")
        if content_type is not None:
            fields["mime"] = _MIME_END.split(content_type, 1)[0].strip()
    if status is not None:
        fields["status"] = status
    if payload_digest is not None:
        fields["digest"] = payload_digest
    fields |= {"length": str(length), "offset": str(offset), "filename": filename}
    # The record's WARC-Date, 2026-11-30T13:00:00.123456Z, as 20261130130000.
    timestamp = date[0:4] + date[5:7] + date[8:10] + date[11:13] + date[14:16] + date[17:19]
    return f"{keys.key(exchange.url)} {timestamp} {json.dumps(fields)}\n"
