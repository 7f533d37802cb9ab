import codecs
import re

import lxml.html
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lib.config import ConfigError, load_config
from lib.content.encoding import decide_encoding
from lib.content.parse import fold_space, is_html, parse_page
from testweb import articles

CONF = load_config()
PAGE = b"""<!DOCTYPE html><html><head><title> My  Page </title>
<base href="http://example.com/dir/"></head>
<body><nav><a href="/home">Home</a></nav>
<h1>Hello</h1><p>Some visible   text.</p>
<script>var hidden = "<a href='/never'>";</script><style>p {}</style>
<a href="sub/page.html" rel="nofollow">Sub <b>page</b></a>
<a href="  http://OTHER.example.org:80/x#y ">other</a>
<a href="mailto:a@b.c">mail</a><a href="javascript:void(0)">js</a>
<a href="/img.png">image</a><a href="sub/page.html">duplicate</a>
<area href="/map" alt="map area"><iframe src="/frame"></iframe>
<footer>footer text</footer></body></html>"""


def test_links_text_title_and_fingerprints():
    result = parse_page("http://example.com/start", PAGE, "text/html; charset=utf-8", CONF)
    assert result.status == "success"
    assert result.title == "My Page"
    assert result.text == "Hello Some visible text. Sub page other mail js image duplicate"
    urls = [link.url for link in result.outlinks]
    assert urls == [
        "http://example.com/home",
        "http://other.example.org/x",
        "http://example.com/dir/sub/page.html",  # from the second link: the first is nofollow
        "http://example.com/map",
        "http://example.com/frame",
    ]
    assert result.outlinks[2].anchor == "duplicate" and result.outlinks[2].rel is None
    assert result.links_rejected == {"nofollow": 1, "scheme": 2, "suffix": 1}
    following = parse_page(
        "http://example.com/start",
        PAGE,
        "text/html",
        load_config(overrides=["parse.follow.nofollow=true"]),
    )
    assert following.outlinks[1].anchor == "Sub page" and following.outlinks[1].rel == "nofollow"
    assert len(result.content_hash) == 64
    assert isinstance(result.simhash, int) and -(2**63) <= result.simhash < 2**63


def test_outlink_limit():
    conf = load_config(overrides=["db.max.outlinks.per.page=2"])
    result = parse_page("http://example.com/start", PAGE, "text/html", conf)
    assert len(result.outlinks) == 2


def test_encodings():
    text = "Grüße, Ελληνικά, 日本語"
    for name in ("windows-1252", "shift_jis", "gb18030", "utf-16"):
        try:
            body = f"<html><body><p>{text}</p></body></html>".encode(name)
        except UnicodeEncodeError:
            sample = "Grüße" if name == "windows-1252" else "日本語"
            body = f"<html><body><p>{sample}</p></body></html>".encode(name)
            expected = sample
        else:
            expected = text
        result = parse_page("http://e.com/", body, f"text/html; charset={name}", CONF)
        assert result.text == expected, name
    bom = codecs.BOM_UTF8 + b"<p>x</p>"
    assert decide_encoding(bom, "text/html; charset=latin-1") == ("utf-8", "bom")
    assert decide_encoding(b"<p>x", "text/html; charset=latin-1") == ("iso8859-1", "header")
    assert decide_encoding(b'<meta charset="shift_jis"><p>x', "text/html") == ("shift_jis", "meta")
    unknown = b'<meta charset="no-such-thing"><p>plain ascii words</p>'
    assert decide_encoding(unknown, "text/html; charset=bogus")[1] in ("detected", "default")
    japanese = "<p>日本語のテキストです。これは検出のための文章です。</p>".encode("shift_jis")
    detected = decide_encoding(japanese * 20, "text/html")
    assert detected[0] in ("shift_jis", "cp932") and detected[1] == "detected"  # cp932 ⊃ sjis


def test_broken_input_never_raises():
    bodies = [
        b"",
        b"\x00\x00\x00",
        b"<html><body><p>unclosed <b>tags <form><form><a href='x",
        b'<a href="' + b"x" * 100 + b'">' * 20000,
        b"\xff\xfe\xfa garbage \x80\x81",
        b"<html>" + b"word " * 200_000 + b"</html>",
    ]
    for body in bodies:
        result = parse_page("http://e.com/", body, "text/html", CONF)
        assert result.status in ("success", "failed")


def test_non_html_is_not_parsed_as_html():
    result = parse_page("http://e.com/f.bin", b"\x00\x01", "application/octet-stream", CONF)
    assert result.status == "not_parsed" and result.reason == "application/octet-stream"
    assert result.outlinks == [] and result.content_hash
    assert is_html(None, b"  <html>") and not is_html(None, b"PK\x03\x04")


def test_meta_robots_and_x_robots_tag():
    page = (
        b"<html><head><meta name='robots' content='NOINDEX'></head>"
        b"<body>secret words <a href='/a'>a</a></body></html>"
    )
    result = parse_page("http://e.com/", page, "text/html", CONF)
    assert result.text is None and result.simhash is not None and result.robots == "noindex"
    assert [link.url for link in result.outlinks] == ["http://e.com/a"]
    plain = b"<html><body>words <a href='/a'>a</a></body></html>"
    tagged = parse_page("http://e.com/", plain, "text/html", CONF, {"x-robots-tag": "nofollow"})
    assert tagged.outlinks == [] and tagged.text == "words a" and tagged.robots == "nofollow"
    both = parse_page("http://e.com/", plain, "text/html", CONF, {"x-robots-tag": "trawl: none"})
    assert both.robots == "nofollow,noindex"
    other = parse_page(
        "http://e.com/", plain, "text/html", CONF, {"x-robots-tag": "otherbot: none"}
    )
    assert other.robots is None and other.outlinks


META_PAGE = b"""<html lang="DE-at"><head><title>t</title>
<meta name="Description" content="  A   short
 summary ">
<link rel="canonical" href="/canonical?utm_source=x">
<link rel="alternate" type="application/rss+xml" href="/feed.xml">
<link rel="sitemap" href="https://e.com/sitemap.xml">
<link rel="stylesheet" href="/style.css">
</head><body>text</body></html>"""


def test_page_metadata():
    result = parse_page("http://e.com/a/b", META_PAGE, "text/html", CONF)
    assert result.description == "A short summary"
    assert result.language == "de-at"
    assert result.canonical == "http://e.com/canonical"
    assert result.feeds == ["http://e.com/feed.xml", "https://e.com/sitemap.xml"]
    assert result.encoding_source in ("detected", "default")
    plain = b"<html><body>x</body></html>"
    headers = {"content-language": "fr, en", "link": '<http://e.com/c>; rel="canonical"'}
    from_headers = parse_page("http://e.com/", plain, "text/html", CONF, headers)
    assert from_headers.language == "fr" and from_headers.canonical == "http://e.com/c"


def test_random_bytes_and_random_html_never_crash_the_parser():
    import random

    rng = random.Random(20261130)
    tags = [
        "<a href='",
        "<div>",
        "</div>",
        "<p",
        ">",
        "<base href=",
        "<meta charset=",
        "\x00",
        "<!--",
        "-->",
        "<script>",
        "</script>",
        "&amp;",
        "&#xD800;",
        "\u2028",
        "<table><tr>",
    ]
    for case in range(1500):
        if case % 2:
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 400)))
        else:
            body = "".join(
                rng.choice(tags) + rng.choice(["x", " ", "é", "\n", "/"])
                for _ in range(rng.randrange(0, 80))
            ).encode("utf-8", "surrogatepass")
        kind = rng.choice(["text/html", "text/html; charset=utf-16", None, "application/xhtml+xml"])
        result = parse_page("http://e.com/p", body, kind, CONF)
        assert result.status in ("success", "failed", "not_parsed"), case


def _not_found_page(path: str) -> bytes:
    words = " ".join(f"w{i % 97} x{i % 89}" for i in range(300))
    return (
        f"<html><title>Sorry</title><p>We could not find {path} on this site. "
        f"Try <a href='http://h.test{path}?again'>http://h.test{path}?again</a>. {words}</p>"
    ).encode()


def test_a_page_naming_its_own_address_is_fingerprinted_without_it():
    # A "not found" page that names the path asked for: the soft-404 probe's random path
    # and a missing page's path must give the same SimHash, else the page is not
    # recognised as the host's "not found" page (updatedb, fetcher.soft404.probe).
    probe = parse_page(
        "http://h.test/trawl-probe-3f9c2a1b",
        _not_found_page("/trawl-probe-3f9c2a1b"),
        "text/html",
        CONF,
    )
    page = parse_page(
        "http://h.test/gone%20later", _not_found_page("/gone later"), "text/html", CONF
    )
    assert probe.simhash == page.simhash
    assert probe.content_hash != page.content_hash
    assert "trawl-probe-3f9c2a1b" in probe.text  # only the fingerprint leaves it out
    other = parse_page(
        "http://h.test/gone later", _not_found_page("/another/path"), "text/html", CONF
    )
    assert other.simhash != page.simhash


_WHITESPACE = [c for c in map(chr, range(0x3001)) if c.isspace()]


@given(st.lists(st.sampled_from(["a", "é", "x-y", *_WHITESPACE]), max_size=40))
def test_fold_space_folds_exactly_what_the_whitespace_regex_matches(pieces):
    text = "".join(pieces)
    assert fold_space(text) == re.sub(r"\s+", " ", text).strip()


@pytest.mark.parametrize("extractor", ["trafilatura", "resiliparse"])
def test_the_main_text_filter_keeps_the_article_and_drops_the_chrome(extractor):
    settings = ["parse.filters=lib.content.main_text:MainText"]
    conf = load_config(overrides=[*settings, f"parse.main_text.extractor={extractor}"])
    article = "".join(
        f"<p>Sentence {k} of the article, with words enough to read.</p>" for k in range(30)
    )
    page = (
        "<html><body><nav><ul><li><a href='/a'>Home</a></li><li><a href='/b'>Sport</a></li>"
        "</ul></nav><main><article><h1>Title</h1>" + article + "</article></main>"
        "<footer><a href='/c'>Contact</a> Copyright Example</footer></body></html>"
    ).encode()
    result = parse_page("http://e.com/a", page, "text/html", conf)
    main = result.metadata["main_text"]
    assert "Sentence 29 of the article" in main and "Sport" not in main
    assert "Copyright Example" not in main
    assert "Sentence 29" in result.text  # the visible text stays as it was


def test_the_default_main_text_leaves_a_blogs_comments_out():
    """trafilatura, the default (bench_main_text: the better on both webs), knows a
    comment section for what it is; the visible text keeps it."""
    conf = load_config(overrides=["parse.filters=lib.content.main_text:MainText"])
    html, truth = articles.page("blog", 3)
    result = parse_page("http://blog.test/3", html.encode(), "text/html", conf)
    main = result.metadata["main_text"]
    first, last = truth.split(". ")[1], truth.split(". ")[-1]
    assert first in main and last.rstrip(".") in main
    comment = lxml.html.fromstring(html).find_class("comment")[0].find("p").text_content()
    assert comment in result.text and comment not in main


def test_an_unknown_main_text_extractor_is_named():
    settings = ["parse.filters=lib.content.main_text:MainText", "parse.main_text.extractor=tika"]
    with pytest.raises(ConfigError, match="parse.main_text.extractor must be one of"):
        parse_page("http://e.com/", b"<p>x</p>", "text/html", load_config(overrides=settings))


def test_the_shipped_exporters_write_files_other_tools_read(tmp_path):
    import json

    import pyarrow.parquet as pq

    from lib.export import Exports

    conf = load_config(
        overrides=[
            "export.plugins=lib.export.jsonl:JsonLines,lib.export.parquet:ParquetFiles",
            f"export.jsonl.dir={tmp_path / 'jsonl'}",
            f"export.parquet.dir={tmp_path / 'parquet'}",
        ]
    )
    document = {
        "url": "http://e.com/a",
        "fetch_status": "success",
        "http_status": 200,
        "fetched_at": 1_700_000_000_000,
        "content_type": "text/html",
        "parse_status": "success",
        "title": "T",
        "text": "text",
        "language": "en",
        "description": None,
        "metadata": {"k": "v"},
        "content_hash": "h",
        "simhash": 5,
        "outlinks": ["http://e.com/b"],
    }
    exports = Exports(conf)
    exports.export([document, {**document, "url": "http://e.com/c"}])
    assert not list((tmp_path / "jsonl").glob("*.jsonl"))  # visible once the task ends
    exports.close()
    lines = next((tmp_path / "jsonl").glob("*.jsonl")).read_text().splitlines()
    assert [json.loads(line)["url"] for line in lines] == ["http://e.com/a", "http://e.com/c"]
    table = pq.read_table(next((tmp_path / "parquet").glob("*.parquet")))
    assert table.column("url").to_pylist() == ["http://e.com/a", "http://e.com/c"]
    assert table.column("metadata").to_pylist()[0] == [("k", "v")]
