"""Re-crawl on Spark against the local web: conditional requests, 304s, adapted intervals.

Host 0's /fresh/1-20 carry ETag and Last-Modified; even pages change when the web's epoch
advances, odd pages never do, and the server answers a conditional request whose
validator still matches with 304. Round 1 fetches them; the epoch advances; round 2
runs 31 days later (``--adddays 31``, past the 30-day default interval).
"""

from datetime import UTC
from pathlib import Path

import pyarrow as pa
import pytest
from crawlruns import web_crawl_args
from deltalake import DeltaTable
from warcio.archiveiterator import ArchiveIterator
from weblog import entries_for

from engine.executors.freshness import freshness
from engine.runtime.layout import DataDir
from jobs import crawl
from lib import vocabulary as st
from lib.archive.warc import REVISIT_IDENTICAL, REVISIT_NOT_MODIFIED
from testweb.site import FRESH_PAGES, fresh_changes

pytestmark = [pytest.mark.spark, pytest.mark.web]
AGENT_URL = "https://trawl.invalid/test-recrawl"
DAY = 86_400


@pytest.fixture(scope="module")
def recrawled(spark, web, tmp_path_factory):
    root = tmp_path_factory.mktemp("recrawl")
    base = web.site.base(0)
    seeds = root / "seeds.txt"
    seeds.write_text("".join(f"{base}/fresh/{k}\n" for k in range(1, FRESH_PAGES + 1)))
    data = root / "data"
    args = web_crawl_args(data, AGENT_URL, "db.max.depth=0")
    assert crawl.main(["--seeds", str(seeds), "--rounds", "1", *args]) == 0
    first = {r["url"]: r for r in spark.read.format("delta").load(str(data / "crawldb")).collect()}
    web.advance_epoch()
    try:
        assert crawl.main(["--rounds", "1", "--adddays", "31", *args]) == 0
    finally:
        web.advance_epoch(-1)
    second = {r["url"]: r for r in spark.read.format("delta").load(str(data / "crawldb")).collect()}
    log = [e for e in entries_for(web, AGENT_URL) if e["path"].startswith("/fresh/")]
    return DataDir.at(data), base, first, second, log


def test_conditional_requests_for_refetches(recrawled):
    _, _, _, _, log = recrawled
    ordered = sorted(log, key=lambda e: e["start"])
    firsts, again = {}, []
    for entry in ordered:
        if entry["path"] in firsts:
            again.append(entry)
        else:
            firsts[entry["path"]] = entry
    assert len(firsts) == FRESH_PAGES and len(again) == FRESH_PAGES
    assert not [e for e in firsts.values() if e["if_none_match"] or e["if_modified_since"]]
    conditional = [e for e in again if e["if_none_match"] and e["if_modified_since"]]
    assert len(conditional) / len(again) >= 0.95
    for entry in again:
        number = int(entry["path"].rsplit("/", 1)[1])
        assert entry["status"] == (200 if fresh_changes(number) else 304), entry["path"]


def test_unchanged_pages_wait_longer_and_changed_pages_shorter(recrawled):
    _, base, first, second, _ = recrawled
    for number in range(1, FRESH_PAGES + 1):
        url = f"{base}/fresh/{number}"
        before, after = first[url], second[url]
        assert before["fetch_interval"] == 30 * DAY and before["revisit_count"] == 0
        assert after["revisit_count"] == 1 and after["fetch_count"] == 2
        if fresh_changes(number):
            assert after["status"] == st.FETCHED and after["change_count"] == 1
            assert after["content_hash"] != before["content_hash"]
            assert after["fetch_interval"] == DAY  # changed at every re-fetch: daily
        else:
            assert after["status"] == st.NOTMODIFIED and after["change_count"] == 0
            assert after["content_hash"] == before["content_hash"]
            assert after["etag"] == before["etag"]
            assert after["fetch_interval"] == 42 * DAY  # 30 days x (1 + 0.4)
        assert after["fetch_time"] > after["last_fetch_time"]


def test_304s_are_warc_revisit_records(recrawled):
    data, base, _, _, _ = recrawled
    last = data.segment(data.segment_names()[-1])
    revisits, responses = [], []
    for path in sorted(Path(last.warc_dir).glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if not uri or "/fresh/" not in uri:
                    continue
                if record.rec_type == "revisit":
                    assert record.rec_headers.get_header("WARC-Profile") == REVISIT_NOT_MODIFIED
                    # It names the capture it confirms; no HTTP head (tests/test_replay.py).
                    assert record.rec_headers.get_header("WARC-Refers-To") is not None
                    assert record.http_headers is None
                    revisits.append(uri)
                elif record.rec_type == "response":
                    responses.append(uri)
    unchanged = [f"{base}/fresh/{k}" for k in range(1, FRESH_PAGES + 1) if not fresh_changes(k)]
    changed = [f"{base}/fresh/{k}" for k in range(1, FRESH_PAGES + 1) if fresh_changes(k)]
    assert sorted(revisits) == sorted(unchanged)
    assert sorted(responses) == sorted(changed)


def test_freshness_figures(spark, recrawled):
    data, _, _, second, _ = recrawled
    summary = data.segment(data.segment_names()[-1]).summary("updated")["freshness"]
    assert summary["pages"] == FRESH_PAGES == summary["urls"]
    assert (summary["due"], summary["overdue"], summary["fresh"]) == (0.0, 0.0, 1.0)
    assert summary["age_days"]["<1"] == FRESH_PAGES
    # 31 days on: the changed pages (daily) are due and overdue, the unchanged (42 days) not
    later = max(r["last_fetch_time"].timestamp() for r in second.values()) * 1000 + 31 * DAY * 1000
    figures = freshness(spark.read.format("delta").load(data.crawldb), int(later))
    assert (figures["due"], figures["overdue"], figures["fresh"]) == (0.5, 0.5, 0.5)
    assert figures["age_days"]["30-90"] == FRESH_PAGES


def test_seed_metadata_survives_the_rounds(spark, web, tmp_path):
    """A seed's metadata (a map column) stays on its crawldb row through the merges of
    two rounds of updatedb; a seed given none keeps none."""
    base = web.site.base(0)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{base}/fresh/1\tcategory=news\tcustomer=acme\n{base}/fresh/2\n")
    data = tmp_path / "data"
    args = web_crawl_args(data, AGENT_URL, "db.max.depth=1")
    assert crawl.main(["--seeds", str(seeds), "--rounds", "2", *args]) == 0
    rows = {r["url"]: r for r in spark.read.format("delta").load(str(data / "crawldb")).collect()}
    first, second = rows[f"{base}/fresh/1"], rows[f"{base}/fresh/2"]
    assert first["status"] == st.FETCHED and second["status"] == st.FETCHED
    assert first["metadata"] == {"category": "news", "customer": "acme"}
    assert not second["metadata"]


def record_at(path: Path, offset: int):
    """(type, headers, block) of the WARC record at ``offset`` of ``path``."""
    with open(path, "rb") as stream:
        stream.seek(offset)
        record = next(iter(ArchiveIterator(stream, check_digests="raise")))
        return record.rec_type, record.rec_headers, record.content_stream().read()


def test_unchanged_payloads_are_identical_payload_revisits_of_the_first_capture(
    spark, web, tmp_path
):
    """Pages without validators re-fetched unchanged are archived as revisits
    (identical-payload-digest) naming their first capture, which the crawldb keeps
    pointing at; a changed page is a response again; every fetch row points at a record
    of its own URL; a metadata record follows each page's record (warc.metadata.records)."""
    base = web.site.base(0)
    same = [f"{base}/page/{k}" for k in (1, 2)]
    changing = f"{base}/fresh/2"  # even: changes with the epoch (and is asked with validators)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in [*same, changing]))
    data = DataDir.at(str(tmp_path / "data"))
    args = web_crawl_args(data.root, AGENT_URL, "db.max.depth=0", "warc.metadata.records=true")
    assert crawl.main(["--seeds", str(seeds), "--rounds", "1", *args]) == 0
    first = {r["url"]: r for r in spark.read.format("delta").load(data.crawldb).collect()}
    web.advance_epoch()
    try:
        assert crawl.main(["--rounds", "1", "--adddays", "31", *args]) == 0
    finally:
        web.advance_epoch(-1)
    second = {r["url"]: r for r in spark.read.format("delta").load(data.crawldb).collect()}
    segment = data.segment(data.segment_names()[-1])
    fetched = spark.read.format("delta").load(segment.table("fetch")).collect()
    kinds = {}
    for row in fetched:  # every pointer resolves to a record of the row's own URL
        kind, headers, _ = record_at(Path(segment.warc_dir) / row["warc_file"], row["warc_offset"])
        assert headers.get_header("WARC-Target-URI") == row["url"]
        kinds[row["url"]] = (kind, headers)
    for url in same:
        kind, headers = kinds[url]
        assert kind == "revisit"
        assert headers.get_header("WARC-Profile") == REVISIT_IDENTICAL
        assert headers.get_header("WARC-Refers-To-Target-URI") == url
        before = first[url]
        assert second[url]["last_fetch_time"] > before["last_fetch_time"]
        kept = ("capture_segment", "warc_file", "warc_offset", "capture_time", "payload_digest")
        kept += ("capture_record_id",)
        assert [second[url][k] for k in kept] == [before[k] for k in kept]
        earlier = data.segment(before["capture_segment"])
        was, was_headers, body = record_at(
            Path(earlier.warc_dir) / before["warc_file"], before["warc_offset"]
        )
        assert was == "response" and body  # the crawldb points at the record with the body
        assert headers.get_header("WARC-Refers-To-Date") == was_headers.get_header("WARC-Date")
        assert headers.get_header("WARC-Payload-Digest") == before["payload_digest"]
        assert was_headers.get_header("WARC-Payload-Digest") == before["payload_digest"]
    assert kinds[changing][0] == "response"
    rust = DeltaTable(data.crawldb).to_pyarrow_table()  # delta-rs reads the same pointers
    assert rust.schema.field("capture_time").type == pa.timestamp("us", tz="UTC")
    by_url = {r["url"]: r for r in rust.to_pylist()}
    for url in [*same, changing]:
        assert by_url[url]["capture_time"] == second[url]["capture_time"].astimezone(UTC)
        assert (by_url[url]["warc_file"], by_url[url]["warc_offset"]) == (
            second[url]["warc_file"],
            second[url]["warc_offset"],
        )
    assert second[changing]["capture_segment"] == segment.name
    assert second[changing]["payload_digest"] != first[changing]["payload_digest"]
    metadata = {}
    for path in sorted(Path(segment.warc_dir).glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                if record.rec_type == "metadata":
                    about = record.rec_headers.get_header("WARC-Concurrent-To")
                    metadata[about] = record.content_stream().read().decode()
    for url in [*same, changing]:
        fields = metadata[kinds[url][1].get_header("WARC-Record-ID")].splitlines()
        assert fields[1:3] == ["hopsFromSeed: 0", "origin: fetchlist"]
        assert fields[0].startswith("fetchTimeMs: ")
    page_links = metadata[kinds[same[0]][1].get_header("WARC-Record-ID")]
    assert f"outlink: {base}/page/2" in page_links.splitlines()
