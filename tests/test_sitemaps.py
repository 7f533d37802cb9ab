"""Sitemap parsing (lib/content/sitemaps.py): URL sets, indexes, gzip, text, limits, bad input."""

import gzip
import random

from lib.content.sitemaps import MAX_ENTRIES, parse_lastmod, parse_sitemap

URLSET = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://a.test/one</loc><lastmod>2026-03-01</lastmod>
       <changefreq>Daily</changefreq><priority>0.8</priority></url>
  <url><loc>/relative</loc><priority>7</priority></url>
  <url><loc>http://other.test/x</loc></url>
  <url><lastmod>2026-03-01</lastmod></url>
  <url><loc>http://a.test/two</loc><lastmod>not a date</lastmod><changefreq>often</changefreq></url>
</urlset>"""

INDEX = b"""<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>http://a.test/s1.xml.gz</loc><lastmod>2026-01-01T10:00:00+02:00</lastmod></sitemap>
  <sitemap><loc>http://b.test/s2.xml</loc></sitemap>
</sitemapindex>"""


def test_urlset_keeps_own_host_entries_with_their_fields():
    parsed = parse_sitemap("http://a.test/sitemap.xml", URLSET, 10_000_000)
    assert parsed.kind == "urlset"
    assert [e.loc for e in parsed.entries] == [
        "http://a.test/one",
        "http://a.test/relative",
        "http://a.test/two",
    ]
    one, relative, two = parsed.entries
    assert one.lastmod_ms == parse_lastmod("2026-03-01T00:00:00Z")
    assert (one.changefreq_s, one.priority) == (86_400, 0.8)
    assert relative.priority == 1.0  # clamped
    assert (two.lastmod_ms, two.changefreq_s, two.priority) == (None, None, None)
    assert parsed.dropped == {"off_host": 1, "no_loc": 1}


def test_index_gzip_and_text_sitemaps():
    index = parse_sitemap("http://a.test/robots-sitemap.xml", gzip.compress(INDEX), 10_000_000)
    assert index.kind == "index" and [e.loc for e in index.entries] == ["http://a.test/s1.xml.gz"]
    assert index.entries[0].lastmod_ms == parse_lastmod("2026-01-01T08:00:00Z")
    text = parse_sitemap("http://a.test/s.txt", b"http://a.test/a\n\nhttp://z.test/b\n", 1000)
    assert text.kind == "text" and [e.loc for e in text.entries] == ["http://a.test/a"]


def test_limits_bound_a_gzip_bomb_and_the_entry_count():
    bomb = gzip.compress(b"<urlset>" + b" " * 50_000_000, compresslevel=9)
    parsed = parse_sitemap("http://a.test/s.xml.gz", bomb, 1_000_000)
    assert parsed.kind in ("urlset", "invalid")  # cut at 1 MB, never 50 MB in memory
    many = (
        b"<urlset>"
        + b"".join(b"<url><loc>http://a.test/%d</loc></url>" % i for i in range(MAX_ENTRIES + 10))
        + b"</urlset>"
    )
    parsed = parse_sitemap("http://a.test/big.xml", many, 100_000_000)
    assert len(parsed.entries) == MAX_ENTRIES and parsed.dropped["over_limit"] == 1


def test_lastmod_formats():
    assert parse_lastmod("2026-01-31") == parse_lastmod("2026-01-31T00:00:00+00:00")
    assert parse_lastmod("2026-01-31T10:00Z") == parse_lastmod("2026-01-31T12:00:00+02:00")
    assert parse_lastmod("yesterday") is None and parse_lastmod("") is None


def test_random_bytes_and_broken_xml_never_raise():
    rng = random.Random(3)
    samples = [rng.randbytes(rng.randrange(0, 300)) for _ in range(300)]
    samples += [
        b"<urlset><url><loc>http://a.test/x",
        b"<!DOCTYPE x [<!ENTITY e SYSTEM 'file:///etc/passwd'>]><urlset><url><loc>&e;</loc></url></urlset>",
    ]
    samples += [b"\x1f\x8b" + rng.randbytes(50)]
    for body in samples:
        parsed = parse_sitemap("http://a.test/s.xml", body, 100_000)
        assert parsed.kind in ("urlset", "index", "text", "invalid")
        assert all("passwd" not in e.loc and "root:" not in e.loc for e in parsed.entries)
