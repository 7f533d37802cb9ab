import gzip
import hashlib
import os
from base64 import b32encode
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from lib.archive.warc import REVISIT_IDENTICAL, REVISIT_NOT_MODIFIED, WarcFile
from lib.exchange import Exchange, PriorCapture


def exchange(url, body, status=200, truncated=False):
    return Exchange(
        url=url,
        request_headers=[("Host", "a.test"), ("User-Agent", "Trawl/0.1")],
        started=1_700_000_000.25,
        status=status,
        reason_phrase="OK",
        response_headers=[
            ("Content-Type", "text/html"),
            ("Transfer-Encoding", "chunked"),
        ],
        raw_body=body,
        body=body,
        truncated=truncated,
    )


def sha1_b32(data):
    return "sha1:" + b32encode(hashlib.sha1(data).digest()).decode()


def test_records_read_back_with_valid_digests(tmp_path):
    path = tmp_path / "warc" / "test.warc.gz"
    warc = WarcFile(str(path), {"software": "Trawl/test"})
    offsets = [
        warc.write_exchange(exchange("http://a.test/1?q=x", b"<html>one</html>")),
        warc.write_exchange(exchange("http://a.test/2", b"two" * 1000, truncated=True)),
    ]
    assert not path.exists()  # only visible once closed
    warc.close()
    records = []
    with open(path, "rb") as handle:
        for record in ArchiveIterator(handle, check_digests="raise"):
            payload = record.content_stream().read()
            records.append((record.rec_type, record, payload))
    assert [r[0] for r in records] == ["warcinfo", "response", "request", "response", "request"]
    response = records[1][1]
    assert response.rec_headers.get_header("WARC-Target-URI") == "http://a.test/1?q=x"
    assert response.rec_headers.get_header("WARC-Date") == "2023-11-14T22:13:20.250000Z"
    assert response.rec_headers.get_header("WARC-Payload-Digest") == sha1_b32(b"<html>one</html>")
    assert response.http_headers.get_header("X-Crawler-Transfer-Encoding") == "chunked"
    assert response.http_headers.get_header("Transfer-Encoding") is None
    request = records[2][1]
    assert request.http_headers.protocol == "GET" and "/1?q=x" in request.http_headers.statusline
    assert request.rec_headers.get_header("WARC-Concurrent-To") == response.rec_headers.get_header(
        "WARC-Record-ID"
    )
    assert records[3][1].rec_headers.get_header("WARC-Truncated") == "length"
    with open(path, "rb") as handle:
        handle.seek(offsets[1].offset)
        record = next(iter(ArchiveIterator(handle)))
        assert record.rec_headers.get_header("WARC-Target-URI") == "http://a.test/2"


def test_abort_leaves_nothing(tmp_path):
    path = tmp_path / "x.warc.gz"
    warc = WarcFile(str(path), {})
    warc.abort()
    assert list(tmp_path.iterdir()) == []


EARLIER_ID = "<urn:uuid:00000000-0000-4000-8000-000000000001>"


def prior(body: bytes, identical: bool = True) -> PriorCapture:
    """The capture archived before of a page whose payload was ``body``."""
    return PriorCapture(sha1_b32(body), 1_600_000_000_123, EARLIER_ID, identical)


def test_a_304_names_the_capture_it_confirms_and_holds_no_http_head(tmp_path):
    """WARC 1.1, 6.7.3, with every WARC-Refers-To field; no HTTP head, so that a replay
    tool serves the capture named (the 304's own headers are in the fetch table)."""
    path = tmp_path / "revisit.warc.gz"
    warc = WarcFile(str(path), {"software": "Trawl/test"})
    earlier = prior(b"<html>kept</html>")
    named = warc.write_exchange(exchange("http://a.test/same", b"", status=304), earlier)
    alone = warc.write_exchange(exchange("http://a.test/alone", b"", status=304))
    warc.close()
    assert named.payload_digest == earlier.payload_digest and alone.payload_digest is None
    with open(path, "rb") as stream:
        stream.seek(named.offset)
        record = next(iter(ArchiveIterator(stream, check_digests="raise")))
        headers = record.rec_headers
        assert record.rec_type == "revisit" and record.http_headers is None
        assert headers.get_header("WARC-Profile") == REVISIT_NOT_MODIFIED
        assert headers.get_header("WARC-Refers-To") == EARLIER_ID
        assert headers.get_header("WARC-Refers-To-Target-URI") == "http://a.test/same"
        assert headers.get_header("WARC-Refers-To-Date") == "2020-09-13T12:26:40.123000Z"
        assert headers.get_header("WARC-Payload-Digest") == earlier.payload_digest
        assert headers.get_header("Content-Length") == "0"
        stream.seek(alone.offset)  # a 304 with nothing archived to name: its head alone
        record = next(iter(ArchiveIterator(stream, check_digests="raise")))
        assert record.rec_headers.get_header("WARC-Refers-To") is None
        assert record.http_headers.get_statuscode() == "304"


def test_a_200_with_the_payload_archived_before_is_an_identical_payload_revisit(tmp_path):
    """WARC 1.1, 6.7.2: headers only, the payload's digest, the earlier capture named."""
    path = tmp_path / "identical.warc.gz"
    warc = WarcFile(str(path), {"software": "Trawl/test"})
    body = b"<html>unchanged</html>"
    earlier = prior(body)
    same = warc.write_exchange(exchange("http://a.test/same", body), earlier)
    off = warc.write_exchange(exchange("http://a.test/off", body), prior(body, identical=False))
    other = prior(b"<html>before</html>")
    changed = warc.write_exchange(exchange("http://a.test/changed", body), other)
    cut = warc.write_exchange(exchange("http://a.test/cut", body, truncated=True), earlier)
    gone = warc.write_exchange(exchange("http://a.test/gone", body, status=404), earlier)
    warc.close()
    assert [w.kind for w in (same, off, changed, cut, gone)] == [
        "revisit",
        "response",
        "response",
        "response",
        "response",
    ]
    assert {w.payload_digest for w in (same, changed, cut, gone)} == {sha1_b32(body)}
    with open(path, "rb") as stream:
        stream.seek(same.offset)
        record = next(iter(ArchiveIterator(stream, check_digests="raise")))
        headers = record.rec_headers
        assert record.rec_type == "revisit"
        assert headers.get_header("WARC-Profile") == REVISIT_IDENTICAL
        assert headers.get_header("WARC-Refers-To-Target-URI") == "http://a.test/same"
        assert headers.get_header("WARC-Refers-To-Date") == "2020-09-13T12:26:40.123000Z"
        assert headers.get_header("WARC-Refers-To") == EARLIER_ID
        assert headers.get_header("WARC-Payload-Digest") == sha1_b32(body)
        assert record.http_headers.get_statuscode() == "200"
        assert record.content_stream().read() == b""  # headers only
        assert headers.get_header("WARC-Warcinfo-ID") is not None


def test_a_metadata_record_names_its_response_and_carries_warc_fields(tmp_path):
    path = tmp_path / "metadata.warc.gz"
    warc = WarcFile(str(path), {"software": "Trawl/test"})
    written = warc.write_exchange(exchange("http://a.test/m", b"<a href=x>x</a>"))
    fields = [("fetchTimeMs", "12"), ("outlink", "http://a.test/x"), ("outlink", "http://b/\ny")]
    warc.write_metadata("http://a.test/m", written, fields)
    warc.close()
    with open(path, "rb") as stream:
        records = [
            (r.rec_type, r.rec_headers, r.content_stream().read())
            for r in ArchiveIterator(stream, check_digests="raise")
        ]
    assert [kind for kind, _, _ in records] == ["warcinfo", "response", "request", "metadata"]
    _, meta, block = records[3]
    assert meta.get_header("WARC-Concurrent-To") == written.record_id
    assert meta.get_header("WARC-Date") == written.date
    assert meta.get_header("Content-Type") == "application/warc-fields"
    assert block.decode().splitlines() == [
        "fetchTimeMs: 12",
        "outlink: http://a.test/x",
        "outlink: http://b/ y",
    ]


def cdxj_indexer_reference(path) -> str:
    """What cdxj-indexer (pywb's indexer) makes of a finished file."""
    import io

    from cdxj_indexer.main import CDXJIndexer

    out = io.StringIO()
    with open(path, "rb") as stream:
        CDXJIndexer(output=out, inputs=[stream], sort=True, filename=path.name).process_all()
    return out.getvalue()


def test_inline_cdxj_index_equals_cdxj_indexer(tmp_path):
    path = tmp_path / "index.warc.gz"
    warc = WarcFile(str(path), {"software": "Trawl/test"})
    untyped = exchange("http://b.test/raw", b"\x00\x01")
    untyped.response_headers = [("Content-Length", "2")]
    typed = exchange("https://www.a.test/Zed?b=2&a=1", b"<p>z</p>")
    typed.response_headers = [("Content-Type", "text/html; charset=utf-8")]
    for item in (
        exchange("http://a.test/1?q=x", b"<html>one</html>"),
        exchange("http://a.test/2", b"two" * 1000, truncated=True),
        exchange("http://a.test/3", b"", status=304),
        exchange("http://a.test/4", b"gone", status=404),
        untyped,
        typed,
    ):
        warc.write_exchange(item)
    same = exchange("http://a.test/5", b"<p>same</p>")
    warc.write_exchange(same, prior(b"<p>same</p>"))
    confirmed = exchange("http://a.test/6", b"", status=304)  # names its capture
    warc.write_exchange(confirmed, prior(b"<p>six</p>"))
    warc.close()
    inline = warc.cdxj()
    assert len(inline.splitlines()) == 8
    assert f'"digest": "{sha1_b32(b"<p>six</p>")}"' in inline
    assert '"mime": "warc/revisit", "status": "200", "digest": "sha1:' in inline
    assert inline == cdxj_indexer_reference(path)


def test_non_ascii_headers_and_peer_address_are_stored_as_warcio_would(tmp_path):
    from warcio.statusandheaders import StatusAndHeaders

    path = tmp_path / "odd.warc.gz"
    warc = WarcFile(str(path), {"software": "Trawl/test"})
    odd = exchange("http://a.test/free", b"<p>x</p>")
    # http.client hands over header bytes decoded as Latin-1.
    odd.response_headers = [("Content-Disposition", 'attachment; filename="café.txt"')]
    odd.peer = "127.0.0.9"
    warc.write_exchange(odd)
    warc.close()
    with open(path, "rb") as handle:
        records = list(ArchiveIterator(handle, check_digests="raise"))
    response, request = records[1], records[2]
    expected = StatusAndHeaders("200 OK", list(odd.response_headers), protocol="HTTP/1.1")
    expected.compute_headers_buffer()  # warcio's own %-encoding
    assert response.http_headers.to_ascii_bytes() == expected.headers_buff
    assert "%C3%A9" in response.http_headers.get_header("Content-Disposition")
    assert response.rec_headers.get_header("WARC-IP-Address") == "127.0.0.9"
    assert request.rec_headers.get_header("WARC-IP-Address") == "127.0.0.9"
    assert request.rec_headers.get_header("WARC-Payload-Digest") == sha1_b32(b"")


def test_request_line_target_is_the_urls_path_and_query(tmp_path):
    """The request record's target is urlsplit's path and query, whatever the URL's shape
    (written by hand for the common case)."""
    from urllib.parse import urlsplit

    urls = [
        "http://a.test",
        "http://a.test/",
        "http://a.test:8080/p/q.html",
        "http://a.test?x=1",
        "http://a.test/p?x=1&y=/z",
        "http://a.test/p?",
        "http://a.test/p#frag",
        "http://a.test/p?x=1#frag?y",
        "http://user@a.test:81/p",
        "https://[::1]:8443/v6?q",
    ]
    path = tmp_path / "targets.warc.gz"
    warc = WarcFile(str(path), {"software": "Trawl/test"})
    for url in urls:
        warc.write_exchange(exchange(url, b"x"))
    warc.close()
    with open(path, "rb") as handle:
        lines = [
            r.http_headers.statusline for r in ArchiveIterator(handle) if r.rec_type == "request"
        ]
    expected = []
    for url in urls:
        parts = urlsplit(url)
        expected.append((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    assert [line.split(" ")[0] for line in lines] == expected


GOLDEN = Path(__file__).parent / "data" / "golden.warc"


def fixed_ids():
    """Record IDs in order, as a test can spell them."""
    numbers = iter(range(1, 100))
    return lambda: f"<urn:uuid:00000000-0000-4000-8000-{next(numbers):012d}>"


def golden_exchanges():
    page = exchange("http://a.test/1?q=x", b"<html>one</html>")
    page.peer = "127.0.1.1"
    cut = exchange("http://a.test/2", b"two" * 10, truncated=True)
    unchanged = exchange("http://a.test/3", b"", status=304)
    unchanged.reason_phrase = "Not Modified"
    return [page, cut, unchanged]


def test_a_warc_file_is_byte_for_byte_the_one_kept_in_the_tests(tmp_path):
    """With a fixed clock and fixed record IDs the writer's output is the golden file,
    record for record (gzip members undone: the records' bytes are the contract)."""
    path = tmp_path / "golden.warc.gz"
    warc = WarcFile(
        str(path), {"software": "Trawl/test"}, clock=lambda: 1_700_000_000.5, new_id=fixed_ids()
    )
    for item in golden_exchanges():
        warc.write_exchange(item)
    warc.close()
    written = gzip.decompress(path.read_bytes())
    if os.environ.get("TRAWL_WRITE_GOLDEN"):  # after a deliberate change of the format
        GOLDEN.write_bytes(written)
    assert written == GOLDEN.read_bytes()
    with open(path, "rb") as handle:  # and warcio reads it, digests checked
        kinds = [r.rec_type for r in ArchiveIterator(handle, check_digests="raise")]
    assert kinds == ["warcinfo", "response", "request", "response", "request", "revisit", "request"]
