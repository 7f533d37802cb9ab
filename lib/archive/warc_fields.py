"""Values of WARC header fields, written for every record: the date, the record ID and
the SHA-1 digest labels. Each gives exactly what the obvious standard-library call gives
(``datetime.strftime``, ``uuid.uuid4``, ``base64.b32encode``), at a fraction of its CPU:
they were a tenth of the fetcher's own CPU, three or four calls a page."""

from __future__ import annotations

import os
from datetime import UTC, datetime

_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"  # RFC 4648 base32
_B32_PAIRS = [a + b for a in _B32 for b in _B32]  # ten bits -> two characters
_SHA1_SHIFTS = range(150, -1, -10)  # a SHA-1 is 160 bits: 16 pairs, no padding


def warc_date(epoch_seconds: float) -> str:
    """ISO 8601 UTC date with microseconds, as WARC/1.1 allows:
    ``2026-11-30T13:00:00.123456Z`` (isoformat is C code; strftime's ``%f`` is slow)."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.isoformat(timespec="microseconds")[:-6] + "Z"  # "+00:00" -> "Z"


def warc_date_ms(epoch_ms: int) -> str:
    """The WARC date of a time in epoch milliseconds, exactly (no float on the way): an
    exchange is dated to the millisecond, as the fetch table and the crawldb keep it, so
    that a revisit names its earlier capture's WARC-Date from the crawldb."""
    moment = datetime.fromtimestamp(epoch_ms // 1000, tz=UTC)
    return moment.isoformat()[:-6] + f".{epoch_ms % 1000:03d}000Z"


def record_id() -> str:
    """A new ``<urn:uuid:...>`` record ID: a random (version 4) UUID."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"<urn:uuid:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}>"


def sha1_label(digest) -> str:
    """``sha1:`` and the base32 of a SHA-1 ``hashlib`` object's digest, as the WARC
    digest fields and CDX indexes write it."""
    bits = int.from_bytes(digest.digest(), "big")
    return "sha1:" + "".join([_B32_PAIRS[(bits >> shift) & 1023] for shift in _SHA1_SHIFTS])
