"""The fingerprints' per-shingle work in compiled code (numba): the MD5 of every word
3-shingle (RFC 1321; the simhash package's feature hash), the SimHash's bit votes and
the MinHash minima, page by page in one pass over the pages' words.

MD5's 64 steps depend on each other, so one message at a time leaves the CPU waiting;
``LANES`` messages are hashed side by side (``_compress_lanes``), each step one loop
over the lanes, which the compiler turns into vector instructions (a lane a 32-bit
element), their words laid out word by word (``_put``). The kernel is compiled when
the module is first imported and cached beside this file; a process that imports it
from a zip (a cluster's executors) compiles it for itself, some seconds once per Python
worker. MD5 reads its words little-endian, as the machines Spark runs on are.
"""

from __future__ import annotations

import math
import os

import numpy as np
from numba import njit, types

SINGLE_BLOCK = 55  # bytes: a message, 0x80 and its 8-byte length fit one 64-byte block
# Cached beside the module; not from a zip (--py-files on a cluster), whose copy is new
# for every application: numba would leave a cache of it in the home directory each time.
_CACHE = os.path.isfile(__file__)
_SPACE = 0x20
_MASK = 0xFFFFFFFF
_INIT = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)
_C0, _D0 = _INIT[2:]  # the digest's low 64 bits are C and D plus these
# RFC 1321's per-step shifts, sines and message word indices, one tuple per round.
_S0, _S1, _S2, _S3 = (7, 12, 17, 22), (5, 9, 14, 20), (4, 11, 16, 23), (6, 10, 15, 21)
_K0, _K1, _K2, _K3 = (
    tuple(int(abs(math.sin(16 * r + i + 1)) * 2**32) & _MASK for i in range(16)) for r in range(4)
)
_G0 = tuple(range(16))
_G1 = tuple((5 * i + 1) % 16 for i in range(16))
_G2 = tuple((3 * i + 5) % 16 for i in range(16))
_G3 = tuple((7 * i) % 16 for i in range(16))


@njit(cache=_CACHE, inline="always")
def _step(f, a, b, sine, word, shift):
    f = (f + a + sine + word) & _MASK
    return (b + (((f << shift) | (f >> (32 - shift))) & _MASK)) & _MASK


@njit(cache=_CACHE, inline="always")
def _round0(a, b, c, d, k, w, s):
    return d, _step((b & c) | (~b & d), a, b, k, w, s), b, c


@njit(cache=_CACHE, inline="always")
def _round1(a, b, c, d, k, w, s):
    return d, _step((d & b) | (~d & c), a, b, k, w, s), b, c


@njit(cache=_CACHE, inline="always")
def _round2(a, b, c, d, k, w, s):
    return d, _step(b ^ c ^ d, a, b, k, w, s), b, c


@njit(cache=_CACHE, inline="always")
def _round3(a, b, c, d, k, w, s):
    return d, _step(c ^ (b | ~d), a, b, k, w, s), b, c


@njit(cache=_CACHE)
def _compress(m, a0, b0, c0, d0):
    """One 64-byte block (``m``: its 16 little-endian words) into the state."""
    a, b, c, d = a0, b0, c0, d0
    for i in range(16):
        a, b, c, d = _round0(a, b, c, d, _K0[i], m[_G0[i]], _S0[i % 4])
    for i in range(16):
        a, b, c, d = _round1(a, b, c, d, _K1[i], m[_G1[i]], _S1[i % 4])
    for i in range(16):
        a, b, c, d = _round2(a, b, c, d, _K2[i], m[_G2[i]], _S2[i % 4])
    for i in range(16):
        a, b, c, d = _round3(a, b, c, d, _K3[i], m[_G3[i]], _S3[i % 4])
    return (a0 + a) & _MASK, (b0 + b) & _MASK, (c0 + c) & _MASK, (d0 + d) & _MASK


LANES = 16  # messages hashed side by side: a 512-bit vector of 32-bit words
_K = np.array(_K0 + _K1 + _K2 + _K3, dtype=np.uint32)
_G = np.array(_G0 + _G1 + _G2 + _G3, dtype=np.int64)
_S = np.array([shifts[i % 4] for shifts in (_S0, _S1, _S2, _S3) for i in range(16)], np.uint32)


@njit(cache=_CACHE, inline="always")
def _rotl(x, s):
    x = x & np.uint32(_MASK)
    return ((x << s) | (x >> (np.uint32(32) - s))) & np.uint32(_MASK)


@njit(cache=_CACHE, inline="always")
def _lane_step(r, x, y, z, w, sine, words, shift):
    """Step of round ``r`` in every lane: ``x`` becomes ``y + rotl(x + F(y, z, w) +
    sine + word, shift)`` (``x`` .. ``w``: the lanes' state words in this step's roles)."""
    for lane in range(LANES):
        yv, zv, wv = y[lane], z[lane], w[lane]
        if r == 0:
            f = (yv & zv) | (~yv & wv)
        elif r == 1:
            f = (wv & yv) | (~wv & zv)
        elif r == 2:
            f = yv ^ zv ^ wv
        else:
            f = zv ^ (yv | ~wv)
        x[lane] = yv + _rotl(x[lane] + f + sine + words[lane], shift)


@njit(cache=_CACHE)
def _compress_lanes(words, a, b, c, d):
    """The single-block MD5 of ``LANES`` messages: ``words[w, lane]``, word ``w`` of
    message ``lane``'s padded block; ``a`` .. ``d``: the lanes' states, from MD5's
    initial values to the steps' end (the initial values not yet added back)."""
    a[:], b[:], c[:], d[:] = _INIT
    for r in range(4):
        for j in range(4):
            i = 16 * r + 4 * j
            _lane_step(r, a, b, c, d, _K[i], words[_G[i]], _S[i])
            _lane_step(r, d, a, b, c, _K[i + 1], words[_G[i + 1]], _S[i + 1])
            _lane_step(r, c, d, a, b, _K[i + 2], words[_G[i + 2]], _S[i + 2])
            _lane_step(r, b, c, d, a, _K[i + 3], words[_G[i + 3]], _S[i + 3])


@njit(cache=_CACHE, inline="always")
def _put(words, lane, text, start, length):
    """Message ``text[start:start+length]`` (at most ``SINGLE_BLOCK`` bytes), padded as
    MD5 pads it, as lane ``lane``'s block of ``words``."""
    full = length // 4
    for w in range(full):
        at = start + 4 * w
        words[w, lane] = (
            np.uint32(text[at])
            | (np.uint32(text[at + 1]) << np.uint32(8))
            | (np.uint32(text[at + 2]) << np.uint32(16))
            | (np.uint32(text[at + 3]) << np.uint32(24))
        )
    last = np.uint32(0x80) << np.uint32(8 * (length - 4 * full))
    for byte in range(length - 4 * full):
        last |= np.uint32(text[start + 4 * full + byte]) << np.uint32(8 * byte)
    words[full, lane] = last
    for w in range(full + 1, 14):
        words[w, lane] = 0
    words[14, lane] = np.uint32(length * 8)
    words[15, lane] = 0


@njit(cache=_CACHE, inline="always")
def _bswap32(x):
    return ((x & 0xFF) << 24) | ((x & 0xFF00) << 8) | ((x >> 8) & 0xFF00) | ((x >> 24) & 0xFF)


@njit(cache=_CACHE, inline="always")
def _low64(c, d):
    """The digest's bytes 8..15 (the state's C and D words) as a big-endian 64-bit value,
    as the simhash package reads them."""
    return (np.uint64(_bswap32(c)) << np.uint64(32)) | np.uint64(_bswap32(d))


@njit(cache=_CACHE)
def _pad(block, offset, message, start, length, total):
    """The 64-byte block at ``block[offset:]`` of a message: ``total`` bytes of which
    ``length`` are left from ``message[start:]``, with the 0x80 and length MD5 adds."""
    block[offset : offset + 64] = 0
    data = max(min(length, 64), 0)
    block[offset : offset + data] = message[start : start + data]
    if length < 64:
        if length >= 0:
            block[offset + length] = 0x80
        if length < 56:
            block[offset + 56 : offset + 64].view(np.uint64)[0] = np.uint64(total * 8)


@njit(cache=_CACHE)
def md5_low64(message, start, length, block):
    """MD5's low 64 bits of ``message[start:start+length]``, any length (``block``: 64
    bytes of scratch)."""
    a, b, c, d = _INIT
    words = block[:64].view(np.uint32)
    done = 0
    while True:
        _pad(block, 0, message, start + done, length - done, length)
        a, b, c, d = _compress(words, a, b, c, d)
        done += 64
        if length - done < -8:  # the 0x80 and the length went into this block
            return _low64(c, d)


@njit(cache=_CACHE)
def _single_spaced(page, out):
    """The page's words with one space between them into ``out``; their count and the
    number of bytes written."""
    size = 0
    count = 0
    in_word = False
    for byte in page:
        if byte == _SPACE:
            in_word = False
            continue
        if not in_word:
            if count:
                out[size] = _SPACE
                size += 1
            count += 1
            in_word = True
        out[size] = byte
        size += 1
    return count, size


@njit(cache=_CACHE)
def _shingle_spans(text, size, count, width, starts, ends):
    """Start and end of every shingle (``width`` words) of a single-spaced text of
    ``count`` words; their number. A text of up to ``width`` words is one shingle."""
    word_starts = np.empty(count + 1, dtype=np.int64)
    word = 0
    word_starts[0] = 0
    for i in range(size):
        if text[i] == _SPACE:
            word += 1
            word_starts[word] = i + 1
    word_starts[count] = size + 1
    if count <= width:
        starts[0], ends[0] = 0, size
        return 1
    for i in range(count - width + 1):
        starts[i] = word_starts[i]
        ends[i] = word_starts[i + width] - 1
    return count - width + 1


@njit(cache=_CACHE)
def _digests(text, starts, ends, shingles, values):
    """Every shingle's MD5 low 64 bits into ``values`` (one slot longer than the
    shingles): single-block ones ``LANES`` at a time."""
    words = np.zeros((16, LANES), dtype=np.uint32)
    a, b = np.empty(LANES, np.uint32), np.empty(LANES, np.uint32)
    c, d = np.empty(LANES, np.uint32), np.empty(LANES, np.uint32)
    scratch = np.empty(64, dtype=np.uint8)
    waiting = np.empty(LANES, dtype=np.int64)
    count = 0
    for i in range(shingles):
        length = ends[i] - starts[i]
        if length > SINGLE_BLOCK:
            values[i] = md5_low64(text, starts[i], length, scratch)
            continue
        _put(words, count, text, starts[i], length)
        waiting[count] = i
        count += 1
        if count == LANES:
            _lanes_out(words, a, b, c, d, values, waiting)
            count = 0
    if count:
        waiting[count:] = len(values) - 1  # the unused lanes' digests: past every shingle
        _lanes_out(words, a, b, c, d, values, waiting)


@njit(cache=_CACHE, inline="always")
def _lanes_out(words, a, b, c, d, values, waiting):
    """The lanes' digests' low 64 bits into ``values[waiting[lane]]``."""
    _compress_lanes(words, a, b, c, d)
    for lane in range(LANES):
        values[waiting[lane]] = _low64((c[lane] + _C0) & _MASK, (d[lane] + _D0) & _MASK)


@njit(cache=_CACHE)
def _simhash(values):
    """The SimHash of the digests: bit k set when more than half of them set it."""
    simhash = np.uint64(0)
    for k in range(64):
        votes = 0
        for value in values:
            votes += np.int64((value >> np.uint64(k)) & np.uint64(1))
        if 2 * votes > len(values):
            simhash |= np.uint64(1) << np.uint64(k)
    return simhash


@njit(cache=_CACHE)
def _sketch(values, a, b, inverse, pick, out):
    """The b-bit MinHash sketch of the digests into ``out``, a byte for each function
    ``a * x + b`` (mod 2^64). With ``a`` odd the function is a bijection, so the
    minimising digest is got back from the minimum through ``a``'s inverse."""
    for h in range(len(a)):
        least = np.uint64(0xFFFFFFFFFFFFFFFF)
        for value in values:
            least = min(least, a[h] * value + b[h])
        chosen = (least - b[h]) * inverse[h]
        out[h] = np.uint8((chosen * pick) >> np.uint64(56))


_WORDS = types.Array(types.uint8, 1, "C", readonly=True)
_INT64S = types.Array(types.int64, 1, "C")
_UINT64S = types.Array(types.uint64, 1, "C")
_PAGE_FINGERPRINTS = types.Tuple(
    (_UINT64S, types.Array(types.uint8, 2, "C"), types.Array(types.bool_, 1, "C"))
)(_WORDS, _INT64S, types.int64, _UINT64S, _UINT64S, _UINT64S, types.uint64)


# Compiled (or read from the cache) when the module is imported, by its signature: the
# fetch tasks' workers import it before the first page comes (``jobs.fetch``).
@njit(_PAGE_FINGERPRINTS, cache=_CACHE)
def page_fingerprints(buffer, bounds, width, a, b, inverse, pick):
    """``(simhash, sketches, fingerprinted)`` of each page over its shingles of ``width``
    words: page ``i``'s words are ``buffer[bounds[i]:bounds[i+1]]``, separated by spaces;
    a page without words gets ``fingerprinted[i] == False``. ``a``, ``b``: the MinHash
    functions' odd multipliers and offsets, ``inverse``: the multipliers' inverses mod
    2^64; ``pick``: the multiplier whose top byte is a minimising digest's sketch byte."""
    pages = len(bounds) - 1
    simhashes = np.zeros(pages, dtype=np.uint64)
    sketches = np.zeros((pages, len(a)), dtype=np.uint8)
    fingerprinted = np.zeros(pages, dtype=np.bool_)
    longest = 1
    for p in range(pages):
        longest = max(longest, bounds[p + 1] - bounds[p])
    text = np.empty(longest, dtype=np.uint8)
    starts = np.empty(longest // 2 + 2, dtype=np.int64)
    ends = np.empty(longest // 2 + 2, dtype=np.int64)
    values = np.empty(longest // 2 + 3, dtype=np.uint64)
    for p in range(pages):
        count, size = _single_spaced(buffer[bounds[p] : bounds[p + 1]], text)
        if count == 0:
            continue
        shingles = _shingle_spans(text, size, count, width, starts, ends)
        _digests(text, starts, ends, shingles, values)
        simhashes[p] = _simhash(values[:shingles])
        _sketch(values[:shingles], a, b, inverse, pick, sketches[p])
        fingerprinted[p] = True
    return simhashes, sketches, fingerprinted
