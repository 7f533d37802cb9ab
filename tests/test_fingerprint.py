import random

from lib.fingerprint import (
    content_hash,
    hamming64,
    shingles,
    simhash64,
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
