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
as 64 bits, a bit set when more than half of the features set it), computed with one
numpy pass over all digests instead of the package's per-feature loop; a test checks it
is bit-identical to ``simhash.Simhash`` on the same features.

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

from lib.content import md5vec

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
_CHUNK = 32_768  # shingles hashed per numpy pass: ~10 MB of blocks, fits the caches
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

    The texts' words are joined into one UTF-8 buffer; each shingle is a slice of it
    (its words joined by single spaces, as ``shingles`` makes it), hashed by the
    vectorised MD5 when it fits one block and by hashlib otherwise.
    """
    words = [_joined_words(text) if text else b"" for text in texts]
    buffer = np.frombuffer(b" ".join(words) + bytes(md5vec.MAX_SINGLE_BLOCK), dtype=np.uint8)
    starts, ends = _word_bounds(buffer, words)
    first, last, owner = _shingle_words(words)
    if not len(first):
        return [(None, None)] * len(texts)
    shingle_starts = starts[first]
    lengths = ends[last] - shingle_starts
    digests = _second_half_digests(buffer, shingle_starts, lengths)
    bits = np.unpackbits(digests, axis=1)
    values = digests.view(">u8").ravel()
    boundaries = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]).tolist()
    results: list[tuple[int | None, bytes | None]] = [(None, None)] * len(texts)
    for begin, end in zip(boundaries, boundaries[1:] + [len(owner)], strict=True):
        # a column sum per text: np.add.reduceat along axis 0 is slower
        majority = 2 * bits[begin:end].sum(axis=0, dtype=np.int32) > end - begin
        value = int.from_bytes(np.packbits(majority).tobytes(), "big")
        results[int(owner[begin])] = (to_signed64(value), minhash_sketch(values[begin:end]))
    return results


def minhash_sketch(digests: np.ndarray) -> bytes:
    """The b-bit MinHash sketch of a page's shingle digests (unsigned 64-bit)."""
    # A repeated shingle hashes the same: the minimum over the page's shingles is the one
    # over its set. One row per hash function, so that each minimum is a contiguous scan.
    digests = digests.astype(np.uint64)
    with np.errstate(over="ignore"):  # arithmetic mod 2^64
        hashed = _MINHASH_A[:, None] * digests[None, :]
        hashed += _MINHASH_B[:, None]
        chosen = digests[hashed.argmin(axis=1)]
        return ((chosen * _MINHASH_PICK) >> np.uint64(56)).astype(np.uint8).tobytes()


def resemblance(a: bytes, b: bytes) -> float:
    """The Jaccard resemblance two sketches estimate (b-bit MinHash, 8 bits)."""
    agree = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    return max(0.0, (agree - 1 / 256) / (1 - 1 / 256))


def band_keys(sketch: bytes) -> list[bytes]:
    """The sketch's LSH band keys, ``MINHASH_ROWS`` bytes each."""
    return [sketch[i : i + MINHASH_ROWS] for i in range(0, len(sketch), MINHASH_ROWS)]


def _joined_words(text: str) -> bytes:
    """The text's lower-cased words joined by single spaces, in UTF-8.

    ASCII text (the common case) goes through one ``bytes.translate``, whose table
    keeps exactly the bytes ``\\w`` matches, lower-cased; other text through the regex.
    """
    if text.isascii():
        return b" ".join(text.encode("ascii").translate(_ASCII_WORD_BYTES).split())
    return _NON_WORD.sub(" ", text.lower()).strip(" ").encode("utf-8")


def _word_bounds(buffer: np.ndarray, words: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of every word in the joined buffer (spaces separate them)."""
    used = sum(map(len, words)) + len(words) - 1
    spaces = np.flatnonzero(buffer[:used] == 0x20)
    return np.r_[0, spaces + 1], np.r_[spaces, used]


def _shingle_words(words: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Index of the first and last word of every shingle, and the text it belongs to.

    Word indices count the empty texts' empty words too, as the joined buffer does.
    """
    firsts, lasts, owners = [], [], []
    offset = 0
    for page, text in enumerate(words):
        count = text.count(b" ") + 1 if text else 0
        if count > SHINGLE_WORDS:
            first = np.arange(offset, offset + count - SHINGLE_WORDS + 1)
            last = first + SHINGLE_WORDS - 1
        elif count:
            first, last = np.array([offset]), np.array([offset + count - 1])
        else:
            first = last = np.empty(0, dtype=np.int64)
        firsts.append(first)
        lasts.append(last)
        owners.append(np.full(len(first), page))
        offset += max(count, 1)
    return (
        np.concatenate(firsts).astype(np.int64),
        np.concatenate(lasts).astype(np.int64),
        np.concatenate(owners).astype(np.int64),
    )


def _second_half_digests(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray):
    """MD5 digest bytes 8..15 (the simhash package keeps the low 64 bits) per shingle."""
    digests = np.empty((len(starts), 8), dtype=np.uint8)
    short = lengths <= md5vec.MAX_SINGLE_BLOCK
    for chunk in np.array_split(np.flatnonzero(short), max(1, int(short.sum()) // _CHUNK + 1)):
        blocks = md5vec.pad_blocks(buffer, starts[chunk], lengths[chunk])
        digests[chunk] = md5vec.md5_second_half(blocks)
    raw = buffer.tobytes()
    for index in np.flatnonzero(~short).tolist():
        begin = int(starts[index])
        piece = raw[begin : begin + int(lengths[index])]
        digests[index] = np.frombuffer(hashlib.md5(piece).digest()[8:], dtype=np.uint8)
    return digests


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
