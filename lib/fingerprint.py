"""Content fingerprints: SHA-256 of the body (exact duplicates) and a 64-bit SimHash of
the visible text (near duplicates, Hamming distance of a few bits).

The SimHash features are word 3-shingles of the lower-cased text (Manku et al. 2007);
the 64-bit value is stored as a signed BIGINT (two's complement) so that Spark's
``bit_count(a ^ b)`` gives the Hamming distance directly.

``simhash64`` is the simhash package's algorithm (MD5 of each feature, the last 8 bytes
as 64 bits, a bit set when more than half of the features set it), computed with one
numpy pass over all digests instead of the package's per-feature loop; a test checks it
is bit-identical to ``simhash.Simhash`` on the same features.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
from simhash import Simhash

SHINGLE_WORDS = 3
_WORD = re.compile(r"\w+", re.UNICODE)


def content_hash(body: bytes) -> str:
    """SHA-256 of the body, as 64 hex digits."""
    return hashlib.sha256(body).hexdigest()


def shingles(text: str, size: int = SHINGLE_WORDS) -> list[str]:
    """Word n-grams of the lower-cased text; a short text is one shingle."""
    words = _WORD.findall(text.lower())
    if len(words) <= size:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + size]) for i in range(len(words) - size + 1)]


def shingle_bytes(text: str, size: int = SHINGLE_WORDS) -> list[bytes]:
    """``shingles(text)`` encoded as UTF-8, made from words encoded once."""
    words = [w.encode("utf-8") for w in _WORD.findall(text.lower())]
    if len(words) <= size:
        return [b" ".join(words)] if words else []
    return [b" ".join(words[i : i + size]) for i in range(len(words) - size + 1)]


def simhash64(text: str) -> int | None:
    """Signed 64-bit SimHash of the text's shingles; ``None`` for a text without words."""
    features = shingle_bytes(text)
    if not features:
        return None
    md5 = hashlib.md5
    digests = b"".join([md5(feature).digest()[8:] for feature in features])
    bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8)).reshape(-1, 64)
    majority = np.packbits(bits.sum(axis=0) > len(features) / 2).tobytes()
    return to_signed64(int.from_bytes(majority, "big"))


def simhash64_reference(text: str) -> int | None:
    """The same fingerprint through the simhash package (slower; for tests)."""
    features = shingles(text)
    return to_signed64(Simhash(features, f=64).value) if features else None


def to_signed64(value: int) -> int:
    """An unsigned 64-bit integer as the signed value Spark's BIGINT stores."""
    return value - (1 << 64) if value >= (1 << 63) else value


def hamming64(a: int, b: int) -> int:
    """Bits that differ between two 64-bit fingerprints (signed or unsigned)."""
    return bin((a ^ b) & ((1 << 64) - 1)).count("1")
