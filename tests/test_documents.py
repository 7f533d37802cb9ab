"""Feeds and PDFs: a feed entry's link is an outlink carrying the entry's date, which
updatedb reads as a sitemap's lastmod (a known article updated since its fetch is due
at once); a PDF cut at the size limit is not parsed."""

import calendar
import time

from crawldb.links import fold, outlinks
from lib import vocabulary as st
from lib.config import load_config
from lib.content.feeds import ENTRY_UPDATED, FeedParser, entry_updated_ms
from lib.content.parse import parse_pages
from lib.vocabulary import ORIGIN_PROBE
from testweb.documents import feed

BASE = "http://feeds.test"
ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom of feeds.test</title>
<entry><title>Dated</title><link href="/a/1"/><updated>2026-11-30T08:15:00+01:00</updated></entry>
<entry><title>Undated</title><link href="/a/2"/></entry>
</feed>"""


def test_rss_entries_are_outlinks_with_their_dates():
    fields = FeedParser().parse(f"{BASE}/feed.xml", feed(BASE), "application/rss+xml", {})
    assert fields["outlinks"] == [
        (f"{BASE}/page/4", "Entry 4", {ENTRY_UPDATED: "2026-12-04T10:00:00Z"}),
        (f"{BASE}/page/5", "Entry 5", {ENTRY_UPDATED: "2026-12-05T10:00:00Z"}),
    ]
    assert fields["metadata"]["feed_updated"] == "2026-12-05T10:00:00Z"


def test_atom_dates_are_utc_and_an_undated_entry_has_none():
    conf = load_config()
    [result] = parse_pages([(f"{BASE}/atom.xml", ATOM, "application/atom+xml", {})], conf)
    links = {link.url: link.metadata for link in result.outlinks}
    assert links == {f"{BASE}/a/1": {ENTRY_UPDATED: "2026-11-30T07:15:00Z"}, f"{BASE}/a/2": None}
    expected = calendar.timegm(time.strptime("2026-11-30 07:15", "%Y-%m-%d %H:%M")) * 1000
    assert entry_updated_ms(links[f"{BASE}/a/1"]) == expected
    assert entry_updated_ms(None) is None and entry_updated_ms({ENTRY_UPDATED: "soon"}) is None


def test_a_feed_entrys_date_is_its_links_lastmod_in_updatedb():
    conf = load_config()
    [result] = parse_pages([(f"{BASE}/atom.xml", ATOM, "application/atom+xml", {})], conf)
    page = {
        "url": f"{BASE}/atom.xml",
        "targets": [link.url for link in result.outlinks],
        "link_metadata": [list((link.metadata or {}).items()) for link in result.outlinks],
        "canonical": None,
        "host": "feeds.test",
        "depth": 0,
        "score": 1.0,
        "origin": None,
        "old_status": None,
    }
    links = fold(outlinks(conf, [page]))
    assert links.column("url").to_pylist() == [f"{BASE}/a/1", f"{BASE}/a/2"]
    assert links.column("lastmod").to_pylist() == [
        entry_updated_ms(result.outlinks[0].metadata),
        None,
    ]
    # A duplicate's links were followed from the copy kept, a soft-404 probe has none.
    for other in ({"old_status": st.DUPLICATE}, {"origin": ORIGIN_PROBE}):
        assert outlinks(conf, [page | other]).num_rows == 0


def test_a_pdf_cut_at_the_size_limit_is_recorded_truncated_not_parsed():
    """A cut PDF is unreadable: not_parsed, reason truncated; a cut HTML page is parsed."""
    from engine.executors.task_parse import parse_batch
    from testweb.documents import pdf

    whole = pdf("Title", "Portable text", f"{BASE}/page/3")
    rows = [
        {"url": f"{BASE}/whole.pdf", "content": whole, "content_type": "application/pdf"},
        {"url": f"{BASE}/cut.pdf", "content": whole[:200], "content_type": "application/pdf"},
        {"url": f"{BASE}/cut.html", "content": b"<p>Cut text", "content_type": "text/html"},
    ]
    rows[1]["truncated"] = rows[2]["truncated"] = True
    parsed = {row["url"]: row for row in parse_batch(load_config().as_dict(), rows)}
    assert parsed[f"{BASE}/whole.pdf"]["parse_status"] == "success"
    assert "Portable text" in parsed[f"{BASE}/whole.pdf"]["text"]
    cut = parsed[f"{BASE}/cut.pdf"]
    assert (cut["parse_status"], cut["reason"], cut["text"]) == ("not_parsed", "truncated", None)
    assert parsed[f"{BASE}/cut.html"]["parse_status"] == "success"
