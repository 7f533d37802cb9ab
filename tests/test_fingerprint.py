import hashlib
import random
import re

import numpy as np

from lib.content import fingerprint_kernel
from lib.content.fingerprint import (
    MINHASH_SIZE,
    _word_bytes,
    content_hash,
    fingerprints_many,
    hamming64,
    shingles,
    simhash64,
    simhash64_many,
    simhash64_reference,
    to_signed64,
)

_RNG = random.Random(7)
VOCABULARY = [f"w{i}" for i in range(300)]
WORDS = [_RNG.choice(VOCABULARY) for _ in range(1000)]
TEXT = " ".join(WORDS)


def test_content_hash_is_sha256():
    assert content_hash(b"abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_near_duplicates_are_close_and_different_texts_far():
    edited = " ".join(WORDS[:100] + ["changed"] * 5 + WORDS[105:])
    other = " ".join(_RNG.choice(VOCABULARY) for _ in range(1000))
    assert hamming64(simhash64(TEXT), simhash64(edited)) <= 3
    assert hamming64(simhash64(TEXT), simhash64(other)) > 10


def test_shingles_and_signed_storage():
    assert shingles("A b c d") == ["a b c", "b c d"]
    assert shingles("one two") == ["one two"]
    assert simhash64("") is None
    assert to_signed64(2**64 - 1) == -1 and to_signed64(5) == 5
    assert hamming64(-1, 0) == 64


def test_vectorised_simhash_is_bit_identical_to_the_simhash_package():
    rng = random.Random(11)
    alphabet = ["crawl", "Straße", "日本語", "x1", "ÉTÉ", "a", "naïve", "42", "über"]
    texts = [
        " ".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 400))) for _ in range(200)
    ]
    texts += ["one", "two words", "three little words", TEXT]
    for text in texts:
        assert simhash64(text) == simhash64_reference(text), text[:60]


def test_batched_simhash_matches_the_package_text_by_text():
    """One batch mixing empty texts, short texts, punctuation-only texts and shingles
    too long for one MD5 block (hashed by hashlib) gives each text its own value."""
    rng = random.Random(13)
    long_word = "ü" * 40  # 80 bytes in UTF-8: a shingle longer than one block
    pieces = ["crawl", "Straße", "日本語の長い文章です", "x_1", long_word, "--", "a", "…"]
    texts = [" ".join(rng.choice(pieces) for _ in range(rng.randrange(0, 60))) for _ in range(300)]
    texts += [None, "", "!!! ???", "one", TEXT]
    expected = [simhash64_reference(text) if text else None for text in texts]
    assert simhash64_many(texts) == expected


def test_compiled_md5_matches_hashlib_for_every_length():
    """Lengths up to three blocks, over every padding case (the 0x80 and the length in
    the last data block or in a block of their own)."""
    rng = random.Random(17)
    scratch = np.empty(64, dtype=np.uint8)
    for length in range(200):
        message = rng.randbytes(length)
        buffer = np.frombuffer(b"##" + message + b"##", dtype=np.uint8)
        value = fingerprint_kernel.md5_low64(buffer, 2, length, scratch)
        assert int(value) == int.from_bytes(hashlib.md5(message).digest()[8:], "big"), length


def test_side_by_side_md5_of_many_messages_matches_hashlib():
    """``_digests``: messages of every single-block length and longer ones, mixed, in
    counts that fill the lanes and leave them part-filled, each its own digest."""
    rng = random.Random(19)
    for count in (1, fingerprint_kernel.LANES - 1, fingerprint_kernel.LANES, 3 * 16 + 5):
        messages = [rng.randbytes(rng.randrange(0, 90)) for _ in range(count)]
        text = np.frombuffer(b"".join(messages) or b" ", dtype=np.uint8)
        ends = np.cumsum([len(m) for m in messages]).astype(np.int64)
        starts = ends - np.array([len(m) for m in messages], dtype=np.int64)
        values = np.zeros(count + 1, dtype=np.uint64)
        fingerprint_kernel._digests(text, starts, ends, count, values)
        for message, value in zip(messages, values[:count].tolist(), strict=True):
            assert value == int.from_bytes(hashlib.md5(message).digest()[8:], "big"), message


def minhash_reference(text: str) -> bytes:
    """The b-bit MinHash sketch, plainly: for each function a * x + b (mod 2^64) the
    shingle digest that minimises it, and its byte that ``pick`` selects."""
    from lib.content.fingerprint import _MINHASH_A, _MINHASH_B, _MINHASH_PICK

    digests = [int.from_bytes(hashlib.md5(s.encode()).digest()[8:], "big") for s in shingles(text)]
    sketch = []
    for a, b in zip(_MINHASH_A.tolist(), _MINHASH_B.tolist(), strict=True):
        chosen = min(digests, key=lambda x: (a * x + b) % (1 << 64))
        sketch.append(((chosen * int(_MINHASH_PICK)) % (1 << 64)) >> 56)
    return bytes(sketch)


def test_minhash_sketch_is_the_plain_minhash():
    """Texts of 1 to 300 words, with repeated shingles and shingles longer than one MD5
    block, in one batch with empty texts: each gets the plain MinHash's sketch."""
    rng = random.Random(23)
    pieces = ["crawl", "Straße", "日本語", "x_1", "ü" * 40, "a", "b", "naïve"]
    texts = [" ".join(rng.choice(pieces) for _ in range(rng.randrange(1, 300))) for _ in range(60)]
    texts += [None, "", "one", "one two three four", TEXT]
    for text, (simhash, sketch) in zip(texts, fingerprints_many(texts), strict=True):
        if not text:
            assert (simhash, sketch) == (None, None)
            continue
        assert len(sketch) == MINHASH_SIZE and sketch == minhash_reference(text), text[:60]
        assert simhash == simhash64_reference(text)


def test_ascii_fast_path_splits_words_as_the_regex_does():
    rng = random.Random(19)
    printable = [chr(code) for code in range(128)]
    texts = [
        "".join(rng.choice(printable) for _ in range(rng.randrange(0, 80))) for _ in range(500)
    ]
    for text in texts:
        expected = " ".join(re.findall(r"\w+", text.lower()))
        assert b" ".join(_word_bytes(text).split()) == expected.encode("ascii"), repr(text)
