"""MD5 of many short messages at once, in numpy (RFC 1321).

SimHash hashes every word shingle of a page with MD5, the simhash package's feature
hash. ``hashlib``'s cost per call from Python is mostly call overhead; the 64 MD5 steps
run here as array operations over all the messages of a batch, a fraction of that per
message. Only single-block messages (≤ 55 bytes) are handled; the
caller hashes longer ones with ``hashlib``. A test compares every digest with hashlib.
"""

from __future__ import annotations

import math

import numpy as np

MAX_SINGLE_BLOCK = 55  # bytes: message + 0x80 + 8-byte length fit one 64-byte block
_SHIFT = [7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4
_K = [np.uint32(int(abs(math.sin(i + 1)) * 2**32) & 0xFFFFFFFF) for i in range(64)]
_WORD_INDEX = [
    i if i < 16 else (5 * i + 1) % 16 if i < 32 else (3 * i + 5) % 16 if i < 48 else (7 * i) % 16
    for i in range(64)
]
_INIT = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)
# Row L: 0xFF for the first L bytes of a message, 0 after them (L = 0 .. 55).
_KEEP_PREFIX = np.where(
    np.arange(MAX_SINGLE_BLOCK) < np.arange(MAX_SINGLE_BLOCK + 1)[:, None], 0xFF, 0
).astype(np.uint8)


def pad_blocks(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The padded MD5 block of each message ``buffer[start:start+length]`` as (16, N)
    little-endian words. ``buffer`` must be followed by at least 55 spare bytes."""
    count = len(starts)
    windows = np.lib.stride_tricks.sliding_window_view(buffer, MAX_SINGLE_BLOCK)[starts]
    blocks = np.empty((count, 64), dtype=np.uint8)
    # A table row of byte masks per length: half the time of comparing and multiplying.
    np.bitwise_and(windows, _KEEP_PREFIX[lengths], out=blocks[:, :MAX_SINGLE_BLOCK])
    blocks[:, MAX_SINGLE_BLOCK:] = 0
    blocks[np.arange(count), lengths] = 0x80
    words = blocks.view("<u4")
    words[:, 14] = lengths.astype(np.uint32) * 8  # message length in bits; high word 0
    return np.ascontiguousarray(words.T)


def md5_second_half(blocks: np.ndarray) -> np.ndarray:
    """Bytes 8..15 of the MD5 digest of each single-block message, as (N, 8) uint8."""
    count = blocks.shape[1]
    a, b, c, d = (np.full(count, value, dtype=np.uint32) for value in _INIT)
    mix = np.empty(count, dtype=np.uint32)
    tmp = np.empty(count, dtype=np.uint32)
    for step in range(64):
        _round_function(step, b, c, d, mix, tmp)
        np.add(mix, a, out=mix)
        np.add(mix, _K[step], out=mix)
        np.add(mix, blocks[_WORD_INDEX[step]], out=mix)
        shift = _SHIFT[step]
        np.left_shift(mix, shift, out=tmp)
        np.right_shift(mix, 32 - shift, out=mix)
        np.bitwise_or(mix, tmp, out=mix)
        np.add(mix, b, out=mix)
        a, d, c, b = d, c, b, a  # rotate the registers; the old ``a`` array takes the sum
        b[...] = mix
    c += np.uint32(_INIT[2])
    d += np.uint32(_INIT[3])
    return np.stack([c, d], axis=1).astype("<u4").view(np.uint8).reshape(count, 8)


def _round_function(step: int, b, c, d, out, tmp) -> None:
    """F, G, H or I of RFC 1321 for the step, written into ``out``."""
    if step < 16:  # F = (b & c) | (~b & d)
        np.bitwise_and(b, c, out=out)
        np.invert(b, out=tmp)
        np.bitwise_and(tmp, d, out=tmp)
        np.bitwise_or(out, tmp, out=out)
    elif step < 32:  # G = (d & b) | (~d & c)
        np.bitwise_and(d, b, out=out)
        np.invert(d, out=tmp)
        np.bitwise_and(tmp, c, out=tmp)
        np.bitwise_or(out, tmp, out=out)
    elif step < 48:  # H = b ^ c ^ d
        np.bitwise_xor(b, c, out=out)
        np.bitwise_xor(out, d, out=out)
    else:  # I = c ^ (b | ~d)
        np.invert(d, out=tmp)
        np.bitwise_or(tmp, b, out=tmp)
        np.bitwise_xor(c, tmp, out=out)
