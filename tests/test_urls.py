import pytest

from lib.config import load_config
from lib.urls import UrlFilter, clean, host_of, normalize, resolve


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://ExAmple.COM:80/a/./b/../c", "http://example.com/a/c"),
        ("https://example.com:443", "https://example.com/"),
        ("http://example.com:8080/x", "http://example.com:8080/x"),
        ("http://example.com/p#frag", "http://example.com/p"),
        ("http://example.com/p#", "http://example.com/p"),
        ("http://example.com/%7euser/%e2%82%ac", "http://example.com/~user/%E2%82%AC"),
        ("http://example.com/?q=%41%2f", "http://example.com/?q=A%2F"),
        ("http://bücher.de/", "http://xn--bcher-kva.de/"),
        ("http://example.com/a b", "http://example.com/a%20b"),
    ],
)
def test_normalize(url, expected):
    assert normalize(url) == expected


def test_normalize_rejects_garbage():
    assert normalize("not a url") is None
    assert normalize("http://[::1") is None


@pytest.mark.parametrize(
    ("href", "base", "expected"),
    [
        ("  /page/2\t", "http://a.com/x/y", "http://a.com/page/2"),
        ("../z", "http://a.com/x/y/", "http://a.com/x/z"),
        ("//b.com/p", "https://a.com/", "https://b.com/p"),
        ("\\\\b.com\\p", "http://a.com/", "http://b.com/p"),
        ("?q=1", "http://a.com/p?x", "http://a.com/p?q=1"),
    ],
)
def test_resolve_as_browsers_do(href, base, expected):
    assert resolve(href, base) == expected


def test_filter_reasons():
    url_filter = UrlFilter(load_config())
    assert clean("mailto:x@example.com", url_filter) == (None, "scheme")
    assert clean("javascript:void(0)", url_filter) == (None, "scheme")
    assert clean("http://a.com/logo.PNG", url_filter) == (None, "suffix")
    assert clean("http://a.com/" + "x" * 3000, url_filter) == (None, "too_long")
    assert clean("http://A.com/ok", url_filter) == ("http://a.com/ok", None)


def test_host_of_has_no_port():
    assert host_of("http://127.0.2.1:8080/x") == "127.0.2.1"
