"""Content fingerprints: SHA-256 of the body (exact duplicates), a 64-bit SimHash of
the visible text (near duplicates a few bits apart; the soft-404 test) and a MinHash
sketch of the same shingles (near duplicates by their Jaccard resemblance).

The MinHash sketch (Broder 1997) has ``MINHASH_SIZE`` one-byte values (b-bit minwise
hashing, Li and König 2010): for each of the hash functions ``a * x + b`` (mod 2^64) over
the shingles' 64-bit digests, one byte of the digest that minimises it. Two pages'
sketches agree at a position with probability ``J + (1 - J) / 256`` (J: the Jaccard
resemblance of their shingle sets), so ``resemblance(a, b)`` estimates J; and the
sketch cut into ``MINHASH_BANDS`` bands of ``MINHASH_ROWS`` bytes gives the band keys
under which pages of high resemblance meet (LSH), so that dedup compares only those.

The SimHash features are word 3-shingles of the lower-cased text (Manku et al. 2007);
the 64-bit value is stored as a signed BIGINT (two's complement) so that Spark's
``bit_count(a ^ b)`` gives the Hamming distance directly.

``simhash64`` is the simhash package's algorithm (MD5 of each feature, the last 8 bytes
as 64 bits, a bit set when more than half of the features set it), computed in compiled
code (``lib.content.fingerprint_kernel``) with the MinHash from the same digests; tests
check it is bit-identical to ``simhash.Simhash`` on the same features, and the sketch
to a plain Python MinHash.

A page that names its own address ("We could not find /a/b on this site") is
fingerprinted without it (``without_own_address``): two such pages are the same page, and
a host's "not found" page must match its answer to the soft-404 probe's random path.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from urllib.parse import unquote, urlsplit

import numpy as np
from simhash import Simhash

SHINGLE_WORDS = 3
_WORD = re.compile(r"\w+", re.UNICODE)
_NON_WORD = re.compile(r"\W+", re.UNICODE)  # its complement: text between words
_ASCII_WORD_BYTES = (
    bytes(
        byte + 32 if 65 <= byte <= 90 else byte if chr(byte).isalnum() or byte == 95 else 32
        for byte in range(128)
    )
    + b" " * 128
)
MINHASH_SIZE = 64  # hash functions, one byte each
MINHASH_ROWS = 4  # bytes per LSH band: pages meet in a band when all four agree
MINHASH_BANDS = MINHASH_SIZE // MINHASH_ROWS
# The hash functions' odd multipliers and offsets, and the multiplier that picks a byte
# of the minimising digest: fixed, so that sketches of every round compare.
_MINHASH_RANDOM = np.random.default_rng(20261204).integers(
    0, np.iinfo(np.uint64).max, size=2 * MINHASH_SIZE + 1, dtype=np.uint64, endpoint=True
)
_MINHASH_A = _MINHASH_RANDOM[:MINHASH_SIZE] | np.uint64(1)
_MINHASH_B = _MINHASH_RANDOM[MINHASH_SIZE : 2 * MINHASH_SIZE]
_MINHASH_PICK = _MINHASH_RANDOM[-1] | np.uint64(1)
_MINHASH_INVERSE = np.array([pow(int(a), -1, 1 << 64) for a in _MINHASH_A], dtype=np.uint64)


def content_hash(body: bytes) -> str:
    """SHA-256 of the body, as 64 hex digits."""
    return hashlib.sha256(body).hexdigest()


def without_own_address(text: str | None, url: str) -> str | None:
    """The text with the page's own URL, and its path (with and without the query, as
    sent and %-decoded), removed where the text names them; a root path ``/`` is kept."""
    if not text:
        return text
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    names = {url, target, parts.path, unquote(url), unquote(target), unquote(parts.path)}
    for name in sorted((n for n in names if len(n) > 1), key=len, reverse=True):
        text = text.replace(name, " ")
    return text


def shingles(text: str, size: int = SHINGLE_WORDS) -> list[str]:
    """Word n-grams of the lower-cased text; a short text is one shingle."""
    words = _WORD.findall(text.lower())
    if len(words) <= size:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + size]) for i in range(len(words) - size + 1)]


def simhash64(text: str | None) -> int | None:
    """Signed 64-bit SimHash of the text's shingles; ``None`` for a text without words."""
    return simhash64_many([text])[0]


def simhash64_many(texts: Sequence[str | None]) -> list[int | None]:
    """``simhash64`` of each text, computed for all of them in one pass."""
    return [simhash for simhash, _ in fingerprints_many(texts)]


def fingerprints_many(texts: Sequence[str | None]) -> list[tuple[int | None, bytes | None]]:
    """``(simhash64, minhash sketch)`` of each text, computed for all of them in one pass.

    The texts' words (lower-cased, anything else a space) go to the compiled kernel in
    one buffer (``lib.content.fingerprint_kernel``), which hashes every shingle once for
    both fingerprints.
    """
    # Imported here: numba and the kernel take half a second to load, and most processes
    # that use this module's constants never fingerprint a page.
    from lib.content import fingerprint_kernel

    pieces = [_word_bytes(text) if text else b"" for text in texts]
    bounds = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum([len(piece) for piece in pieces], out=bounds[1:])
    buffer = np.frombuffer(b"".join(pieces) or b" ", dtype=np.uint8)
    simhashes, sketches, done = fingerprint_kernel.page_fingerprints(
        buffer, bounds, SHINGLE_WORDS, _MINHASH_A, _MINHASH_B, _MINHASH_INVERSE, _MINHASH_PICK
    )
    return [
        (to_signed64(int(value)), sketch.tobytes()) if fingerprinted else (None, None)
        for value, sketch, fingerprinted in zip(
            simhashes.tolist(), sketches, done.tolist(), strict=True
        )
    ]


def resemblance(a: bytes, b: bytes) -> float:
    """The Jaccard resemblance two sketches estimate (b-bit MinHash, 8 bits)."""
    agree = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    return max(0.0, (agree - 1 / 256) / (1 - 1 / 256))


def band_keys(sketch: bytes) -> list[bytes]:
    """The sketch's LSH band keys, ``MINHASH_ROWS`` bytes each."""
    return [sketch[i : i + MINHASH_ROWS] for i in range(0, len(sketch), MINHASH_ROWS)]


def _word_bytes(text: str) -> bytes:
    """The text's lower-cased words in UTF-8, with spaces (one or more) between them.

    ASCII text (the common case) goes through one ``bytes.translate``, whose table
    keeps exactly the bytes ``\\w`` matches, lower-cased; other text through the regex.
    """
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORD_BYTES)
    return _NON_WORD.sub(" ", text.lower()).encode("utf-8")


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
