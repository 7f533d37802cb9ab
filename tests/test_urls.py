import pytest
from ada_url import URL

from lib.config import load_config
from lib.url.domains import registered_domain, same_site
from lib.url.filter import RegexRules, UrlFilter, clean
from lib.url.normalize import UrlNormalizer, host_of, normalize, resolve
from lib.url.traps import url_pattern, url_patterns


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


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.2.1:8080/x",
        "https://www.example.com",
        "http://a-b.example.com/p?q#f",
        "http://example.com:80/",
        "http://example.com./",
        "http://a..b/",
        "http://Example.COM/",
        "HTTP://example.com/",
        "http://0x7f.1/",
        "http://127.1/",
        "http://010.0.0.1/",
        "http://1.2.3.4.5/",
        "http://256.1.1.1/",
        "http://a.1/",
        "http://a.b1x/",
        "http://user:pw@example.com/",
        "http://[::1]:8080/",
        "http://ex%41mple.com/",
        "http://xn--nxasmq6b.com/",
        "http://b\u00fccher.de/",
        "http://a.c\tom/",
        "http://example.com\\x",
        "http://example.com:65535/",
        "http://example.com?q",
        "http://example.com#f",
        "https://example.com\n",
    ],
)
def test_host_of_reads_plain_hosts_as_the_parser_does(url):
    try:
        expected = URL(url).hostname
    except ValueError:
        with pytest.raises(ValueError):
            host_of(url)
        return
    assert host_of(url) == expected


def normalizer(*overrides):
    return UrlNormalizer(load_config(overrides=list(overrides)))


def test_session_and_tracking_parameters_are_stripped():
    keys = normalizer()
    assert (
        keys.key("http://a.com/p?utm_source=x&id=7&UTM_Medium=y&gclid=1") == "http://a.com/p?id=7"
    )
    assert keys.key("http://a.com/p;jsessionid=ABC?x=1") == "http://a.com/p?x=1"
    assert keys.key("http://a.com/p;JSESSIONID=ABC;v=2") == "http://a.com/p;v=2"
    assert keys.key("http://a.com/p?sid=9") == "http://a.com/p"
    assert keys.key("http://a.com/p?b=2&a=1") == "http://a.com/p?b=2&a=1"  # order kept
    off = normalizer("urlnormalizer.strip.params=")
    assert off.key("http://a.com/p?utm_source=x") == "http://a.com/p?utm_source=x"


def test_dedup_key_rules_each_switchable():
    keys = normalizer()
    assert keys.dedup("http://www.a.com/p/?b=2&a=1") == "http://a.com/p?a=1&b=2"
    assert keys.dedup("http://a.com/") == "http://a.com/"
    assert keys.dedup("http://a.com:8080/x/") == "http://a.com:8080/x"
    assert normalizer("urlnormalizer.sort.query=false").dedup("http://a.com/?b=1&a=2") == (
        "http://a.com/?b=1&a=2"
    )
    assert normalizer("urlnormalizer.drop.www=false").dedup("http://www.a.com/") == (
        "http://www.a.com/"
    )
    assert normalizer("urlnormalizer.drop.trailing.slash=false").dedup("http://a.com/x/") == (
        "http://a.com/x/"
    )


def test_dedup_key_read_from_a_plain_url_is_the_parsers(monkeypatch):
    import lib.url.normalize as module

    urls = [
        "http://a.com/",
        "https://www.a.com:8080/x//",
        "http://www.b.org/a/b/c.html",
        "http://10.0.0.1/a/b/",
        "http://127.0.0.1:9/",
        "http://a-b.c-d/e/",
        "http://a.com/p;x/",
        "http://a.com/~x/",
        "http://www.a.com",
    ]
    keys = [module.normalize(url) for url in urls]
    switches = ["", "urlnormalizer.drop.www=false", "urlnormalizer.drop.trailing.slash=false"]
    read = [[normalizer(*filter(None, [s])).dedup(key) for key in keys] for s in switches]
    monkeypatch.setattr(module, "_plain_host", lambda url: None)  # the parser's way alone
    parsed = [[normalizer(*filter(None, [s])).dedup(key) for key in keys] for s in switches]
    assert read == parsed
    assert read[0][1] == "https://a.com:8080/x"


def test_aggressive_rules_never_change_the_url_fetched():
    # /a/ -> 301 -> /a: both stay fetchable as they are and share one dedup key, so the
    # crawldb cannot hold a loop made by normalization.
    keys = normalizer()
    assert keys.key("http://www.a.com/a/") == "http://www.a.com/a/"
    assert keys.key("http://www.a.com/a") == "http://www.a.com/a"
    assert keys.dedup(keys.key("http://www.a.com/a/")) == keys.dedup(keys.key("http://www.a.com/a"))


def test_regex_rules_first_match_wins():
    rules = RegexRules.parse("# comment\n-\\.private\\.\n+^https?://\n-.\n")
    assert rules.accepts("http://a.com/x")
    assert not rules.accepts("http://a.private.com/x")
    assert not rules.accepts("ftp://a.com/x")
    assert not RegexRules.parse("+^https://\n").accepts("http://a.com/")  # no match refuses
    with pytest.raises(ValueError, match="rules:2"):
        RegexRules.parse("+ok\n*bad\n", "rules")


def test_default_regex_file_and_scope_filters():
    url_filter = UrlFilter(load_config(overrides=["urlfilter.hosts.deny=bad.com"]))
    assert url_filter.reject("http://a.com/?print=1") == "regex"
    assert url_filter.reject("http://x.bad.com/") == "host_denied"
    assert url_filter.reject("http://notbad.com/") is None
    allow = UrlFilter(load_config(overrides=["urlfilter.hosts.allow=good.org"]))
    assert allow.reject("http://www.good.org/") is None
    assert allow.reject("http://other.org/") == "host_denied"


def test_trap_filters():
    url_filter = UrlFilter(load_config(overrides=["urlfilter.max.query.params=3"]))
    assert url_filter.reject("http://a.com/?a=1&b=2&c=3") is None
    assert url_filter.reject("http://a.com/?a=1&b=2&c=3&d=4") == "query_params"
    assert url_filter.reject("http://a.com/a/b/a/b/") is None
    assert url_filter.reject("http://a.com/a/b/a/b/a/b/") == "repeated_segments"


def test_url_patterns_abstract_generated_spaces():
    assert url_pattern("http://a.com/cal?y=2031&m=4") == url_pattern("http://a.com/cal?y=1&m=11")
    assert url_pattern("http://a.com/2024/01/05/post") == "http://a.com/{n}/{n}/{n}/post"
    assert url_pattern("http://a.com/item/3f2a9c1b7d") == "http://a.com/item/{id}"
    assert url_pattern("http://a.com/about") == "http://a.com/about"


def test_the_patterns_of_a_column_are_those_of_each_url():
    import random

    import pyarrow as pa

    pieces = ["/", "a", "=", "&", "#", "?", "é", "ü", "7", "42", "0x", "deadBEEF", "f00d9", "%2F"]
    pieces += ["3f2a9c1b7d", "2024", "=x=", "==", "ß", "-", "1234567", "12345678", "abcdefgh"]
    draw = random.Random(54)
    urls = [
        "http://h.test/" + "".join(draw.choice(pieces) for _ in range(draw.randrange(12)))
        for _ in range(2000)
    ]
    urls += ["http://a.com/cal?y=2031&m=4", "http://a.com/item/3f2a9c1b7d?id=&x=9#f=1"]
    assert url_patterns(pa.array(urls)).to_pylist() == [url_pattern(url) for url in urls]


def test_registered_domains_and_site_modes():
    assert registered_domain("www.shop.example.co.uk") == "example.co.uk"
    assert registered_domain("user.github.io") == "user.github.io"  # a public suffix
    assert registered_domain("127.0.2.1") == "127.0.2.1"
    assert same_site("a.example.com", "b.example.com", "byDomain")
    assert not same_site("a.example.com", "b.example.com", "byHost")
    with pytest.raises(ValueError, match="byHost or byDomain"):
        same_site("a", "b", "bySomething")


def test_opted_out_hosts_are_refused():
    url_filter = UrlFilter(load_config(overrides=["db.optout.hosts=quiet.org"]))
    assert url_filter.reject("http://www.quiet.org/x") == "opted_out"
    assert url_filter.reject("http://loud.org/x") is None


_HREFS = [
    "/page/13",
    "page/2",
    "../a/./b",
    "//other.test/x",
    "?q=1",
    "#frag",
    "",
    " /spaced ",
    "HTTP://EXAMPLE.com/A",
    "\\a\\b",
    "a b",
    "/a;jsessionid=1?x=2",
    "/a;jsessionid=1",
    "/a;JSESSIONID=2/b",
    "/%7Euser/%41%2f",
    "http://127.0.0.1:80/",
    "http://0x7f.1/",
    "http://1.2.3/",
    "http://01.2.3.4/x",
    "http://xn--bcher-kva.de/",
    "http://bücher.de/a",
    "http://[::1]:8080/a",
    "http://a.test:65536/",
    "http://user:pw@a.test/",
    "mailto:a@b.test",
    "javascript:void(0)",
    "ftp://a.test/x",
    "/a.GIF",
    "/a/b/a/b/a/b/a/b/",
    "https://a.test:443/x",
    "/x?",
    "/x#",
    "http://www.Example.test./x",
    "http://a_b.test/x",
    "/ä?ö=1",
    "/x\t/y",
    "/?utm_source=1&b=2",
    "http://a.test/p?" + "&".join(map(str, range(25))),
    "http://[bad",
    "http://a.test:99999/",
    "http://deny.test/x",
    "http://sub.deny.test/x",
    "/a/../../..",
    "http://A.TEST",
    "http://a.test/%zz",
    "http://255.255.255.255/",
    "http://256.1.1.1/",
    "/x;y",
    "/x%3b",
]
_BASES = ["http://127.0.40.1:8080/page/3", "https://www.a.test/dir/index.html?x=1", None]


def _corpus():
    for base in _BASES:
        for href in _HREFS:
            yield href, base


def test_fast_resolve_and_clean_agree_with_the_parser(monkeypatch):
    url_filter = UrlFilter(load_config(overrides=["urlfilter.hosts.deny=deny.test"]))
    seen = 0
    for href, base in _corpus():
        try:
            expected = URL(href, base=base).href if base is not None else URL(href).href
        except ValueError:
            expected = None
        absolute = resolve(href, base)
        assert absolute == expected, (href, base)
        if absolute is None:
            continue
        seen += 1
        assert clean(absolute, url_filter, resolved=True) == clean(absolute, url_filter), absolute
    assert seen > 100


def test_reject_reads_plain_keys_as_the_parser_does(monkeypatch):
    url_filter = UrlFilter(load_config(overrides=["urlfilter.hosts.deny=deny.test"]))
    keys = set()
    for href, base in _corpus():
        absolute = resolve(href, base)
        key = url_filter.normalizer.key(absolute) if absolute else None
        if key:
            keys.add(key)
    fast = {key: url_filter.reject(key) for key in keys}
    monkeypatch.setattr("lib.url.filter.plain_parts", lambda key: None)
    assert {key: url_filter.reject(key) for key in keys} == fast
    assert {"suffix", "host_denied", "query_params", "repeated_segments", None} <= set(
        fast.values()
    )
