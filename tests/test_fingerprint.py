import hashlib
import random
import re

import numpy as np

from lib.content import md5vec
from lib.content.fingerprint import (
    _joined_words,
    content_hash,
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


def test_vectorised_md5_matches_hashlib_for_every_single_block_length():
    rng = random.Random(17)
    messages = [rng.randbytes(length) for length in range(56) for _ in range(20)]
    raw = b"".join(messages)
    buffer = np.frombuffer(raw + bytes(md5vec.MAX_SINGLE_BLOCK), dtype=np.uint8)
    lengths = np.array([len(message) for message in messages])
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    digests = md5vec.md5_second_half(md5vec.pad_blocks(buffer, starts, lengths))
    expected = [hashlib.md5(message).digest()[8:] for message in messages]
    assert [row.tobytes() for row in digests] == expected


def test_ascii_fast_path_splits_words_as_the_regex_does():
    rng = random.Random(19)
    printable = [chr(code) for code in range(128)]
    texts = [
        "".join(rng.choice(printable) for _ in range(rng.randrange(0, 80))) for _ in range(500)
    ]
    for text in texts:
        expected = " ".join(re.findall(r"\w+", text.lower()))
        assert _joined_words(text) == expected.encode("ascii"), repr(text)
