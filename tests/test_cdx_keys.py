"""SURT keys made once per host give exactly what ``surt.surt`` gives, URL by URL."""

import random

import surt

from lib.archive.cdx_keys import _ODD_SEGMENT, _PLAIN, SurtKeys

HOSTS = [
    "http://example.com",
    "http://www.Example.com",
    "https://WWW2.sub.example.co.uk:443",
    "http://example.com:8080",
    "http://127.0.20.1:46869",
    "https://user:pw@example.org",
    "http://xn--bcher-kva.example",
    "http://b\u00fccher.example",
    "http://example.com.",
    "http://example.com:99999",
    "http://0177.0.0.1",
    "http://3232235777",
    "HTTP://Example.COM",
    "http://www.example.com:80",
]
PIECES = [
    "a",
    "B",
    "page",
    "7",
    "-",
    "_",
    "~",
    ".",
    "..",
    "",
    "x.HTML",
    "%41",
    "%2F",
    "(s)",
    "index.aspx",
    "é",
    " ",
    ";jsessionid=1",
    "?",
    "?b=2&a=1",
    "#top",
    "?JSESSIONID=x",
]


def random_url(rng: random.Random) -> str:
    path = "/".join(rng.choice(PIECES) for _ in range(rng.randint(0, 5)))
    return rng.choice(HOSTS) + rng.choice(["", "/"]) + path


def expected(url: str) -> str:
    """What the CDXJ index held before: ``surt.surt``, or the URL where it fails."""
    try:
        return surt.surt(url)
    except Exception:  # noqa: BLE001 - as lib.archive.cdx_keys and cdxj-indexer fall back
        return url


def test_keys_equal_surts_for_plain_and_odd_urls():
    rng = random.Random(20261202)
    keys = SurtKeys()
    urls = [random_url(rng) for _ in range(20_000)]
    urls += [h + p for h in HOSTS for p in ("", "/", "/a/", "/A/b.html", "/a/./b", "/a//b")]
    wrong = [(u, keys.key(u), expected(u)) for u in urls if keys.key(u) != expected(u)]
    assert wrong == []
    plain = [u for u in urls if _PLAIN.match(u) and not _ODD_SEGMENT.search(_PLAIN.match(u)[2])]
    assert len(urls) // 10 < len(plain) < len(urls) // 2  # both ways were tried, often


def test_origins_kept_are_bounded():
    keys = SurtKeys()
    for k in range(12_000):
        assert keys.key(f"http://h{k}.example/p") == f"example,h{k})/p"
    assert len(keys._origins) <= 10_000
