"""Which character encoding a page is decoded with, and why (recorded with the parse).

Order (as the HTML standard's sniffing, simplified): a byte-order mark; the charset of
the Content-Type header; a ``<meta charset>`` or ``http-equiv`` declaration in the first
1024 bytes; detection by charset-normalizer; UTF-8 when nothing is known. A declared
name Python does not know is skipped. Decoding never fails: bad bytes become U+FFFD.
"""

from __future__ import annotations

import codecs
import re

from charset_normalizer import from_bytes

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.I)
_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9_\-:.]+)", re.I)
DETECTION_BYTES = 65536


def decide_encoding(body: bytes, content_type: str | None) -> tuple[str, str]:
    """``(encoding, source)``; source is ``bom``, ``header``, ``meta``, ``detected`` or
    ``default``. The encoding is always one Python knows."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name, "bom"
    declared = _HEADER_CHARSET.search(content_type or "")
    if declared and known_codec(declared.group(1)):
        return known_codec(declared.group(1)), "header"
    meta = _META_CHARSET.search(body[:1024])
    if meta and known_codec(meta.group(1).decode("ascii")):
        return known_codec(meta.group(1).decode("ascii")), "meta"
    guess = from_bytes(body[:DETECTION_BYTES]).best()
    if guess is not None and known_codec(guess.encoding):
        return known_codec(guess.encoding), "detected"
    return "utf-8", "default"


def known_codec(name: str) -> str | None:
    """Python's name of an encoding, or ``None`` when Python does not know it."""
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None
