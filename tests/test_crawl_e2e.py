"""Three crawl rounds over the local test web on real Spark and Delta Lake."""

import json
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ROOT, TEST_CRAWL_DELAY, TEST_SERVER_DELAY, crawl_conf_args
from weblog import disallowed_requests, politeness_violations, warc_page_responses

from engine.tables.store import crawldb_version
from jobs import generate, inject, readdb, updatedb
from lib import vocabulary as st
from lib.url.normalize import normalize

pytestmark = [pytest.mark.spark, pytest.mark.web]


def test_three_segments_each_fully_processed(crawled):
    data, _, _ = crawled
    names = data.segment_names()
    assert len(names) == 3
    for name in names:
        segment = data.segment(name)
        assert all(segment.done(stage) for stage in ("generated", "fetched", "parsed", "updated"))


def test_pages_found_by_links_are_fetched_in_later_rounds(crawled, web):
    _, rows, _ = crawled
    by_url = {r["url"]: r for r in rows}
    fetched = [r for r in rows if r["status"] == st.FETCHED]
    assert max(r["depth"] for r in fetched) == 2
    # Seeds covered hosts 0 and 2; hosts 1 and 3 were reached only through links.
    assert {r["host"] for r in fetched} == set(web.site.hosts[: web.site.ring])
    page2 = by_url[f"{web.site.base(0)}/page/2"]
    assert page2["status"] == st.FETCHED and page2["depth"] == 1
    segments = {r["segment"] for r in fetched}
    assert len(segments) == 3
    unfetched = [r for r in rows if r["status"] == st.UNFETCHED]
    assert unfetched and min(r["depth"] for r in unfetched) == 3  # found in round 3


def test_one_row_per_normalized_url(crawled):
    _, rows, _ = crawled
    urls = [r["url"] for r in rows]
    assert len(urls) == len(set(urls))
    assert all(normalize(u) == u for u in urls)
    assert not [u for u in urls if "#" in u or u.startswith(("mailto:", "javascript:"))]


def test_statuses_and_reasons(crawled, web):
    _, rows, _ = crawled
    by_url = {r["url"]: r for r in rows}
    base0 = web.site.base(0)
    assert by_url[f"{base0}/private/secret"]["status"] == st.GONE
    assert by_url[f"{base0}/private/secret"]["reason"] == st.REASON_ROBOTS_DENIED
    assert by_url[f"{base0}/missing"]["reason"] == "http_404"
    moved = by_url[f"{base0}/old-page"]
    assert moved["status"] == st.REDIR_PERM and moved["redirect_to"] == f"{base0}/page/3"
    assert by_url[f"{base0}/page/3"]["status"] == st.FETCHED
    text = by_url[f"{base0}/data.txt"]
    assert text["status"] == st.FETCHED and text["content_type"] == "text/plain"
    for row in rows:
        if row["status"] == st.FETCHED:
            assert len(row["content_hash"]) == 64 and row["http_status"] == 200


def test_no_disallowed_url_was_requested(crawled, web):
    _, rows, log = crawled
    assert log, "the crawl left no requests in the log"
    assert disallowed_requests(log, web.site) == []
    denied = {r["url"] for r in rows if r["reason"] == st.REASON_ROBOTS_DENIED}
    assert f"{web.site.base(2)}/page/5" in denied  # disallowed for Trawl only
    assert f"{web.site.base(3)}/private/secret" not in denied  # host 3 has no robots.txt


def test_no_two_requests_to_a_host_closer_than_its_delay(crawled, web):
    _, _, log = crawled
    host1 = web.site.hosts[1]

    def delay(host):
        return TEST_CRAWL_DELAY if host == host1 else TEST_SERVER_DELAY

    assert politeness_violations(log, delay) == []
    assert len([e for e in log if e["host"] == host1]) >= 3


def test_warc_files_hold_one_response_per_fetched_page(crawled, spark):
    data, _, _ = crawled
    for name in data.segment_names():
        segment = data.segment(name)
        answered = (
            spark.read.format("delta")
            .load(segment.table("fetch"))
            .where("http_status IS NOT NULL AND origin != 'robots'")
        )
        expected = sorted(r["url"] for r in answered.select("url").collect())
        assert sorted(warc_page_responses(segment)) == expected


def test_updatedb_twice_changes_nothing(crawled, spark):
    data, rows, _ = crawled
    last = data.segment_names()[-1]
    version = crawldb_version(spark, data)
    assert updatedb.main(["--data", str(data.root), "--segment", last, *crawl_conf_args()]) == 0
    assert crawldb_version(spark, data) == version
    again = [r.asDict() for r in spark.read.format("delta").load(data.crawldb).collect()]
    key = lambda r: r["url"]  # noqa: E731
    assert sorted(again, key=key) == sorted(rows, key=key)


def test_reinject_keeps_history_and_reports_bad_lines(crawled_copy, spark, web, capsys, tmp_path):
    data, rows, _ = crawled_copy
    seeds = tmp_path / "again.txt"
    seeds.write_text(f"{web.seeds[0]}\tscore=7\nhttp://\n")
    assert inject.main(["--seeds", str(seeds), "--data", str(data.root)]) == 0
    assert "line 2" in capsys.readouterr().err
    home = spark.read.format("delta").load(data.crawldb).where(f"url = '{web.seeds[0]}'")
    row = home.collect()[0]
    before = next(r for r in rows if r["url"] == web.seeds[0])
    assert row["status"] == st.FETCHED and row["content_hash"] == before["content_hash"]
    assert row["fetch_count"] == before["fetch_count"]


def test_readdb_through_submit_sh(crawled):
    data, rows, _ = crawled
    done = subprocess.run(
        [str(ROOT / "submit.sh"), "readdb", "--stats", "--json", "--data", str(data.root)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout[done.stdout.index("{") :])
    assert figures["urls"] == len(rows)
    assert figures["fetched_pages"] == len([r for r in rows if r["status"] == st.FETCHED])
    assert figures["fetched_hosts"] == 4


def test_adddays_makes_fetched_pages_due_again(crawled_copy, spark):
    data, rows, _ = crawled_copy
    before = set(data.segment_names())
    assert generate.main(["--data", str(data.root), "--adddays", "31", *crawl_conf_args()]) == 0
    (name,) = set(data.segment_names()) - before
    listed = {
        r["url"]
        for r in spark.read.format("delta").load(data.segment(name).table("fetchlist")).collect()
    }
    fetched = {r["url"] for r in rows if r["status"] == st.FETCHED}
    assert fetched <= listed


def test_readdb_dump_and_url(crawled, capsys, tmp_path):
    data, rows, _ = crawled
    out = tmp_path / "dump"
    assert readdb.main(["--data", str(data.root), "--dump", str(out)]) == 0
    dumped = [json.loads(line) for f in out.glob("part-*.json") for line in f.open()]
    assert sorted(d["url"] for d in dumped) == sorted(r["url"] for r in rows)
    parquet = tmp_path / "parquet"
    assert readdb.main(["--data", str(data.root), "--dump-parquet", str(parquet)]) == 0
    snapshot = pq.read_table(sorted(parquet.glob("*.parquet")))  # plain Parquet, no Delta
    assert sorted(snapshot.column("url").to_pylist()) == sorted(r["url"] for r in rows)
    assert snapshot.schema.field("fetch_time").type == pa.timestamp("us", tz="UTC")
    capsys.readouterr()
    home = rows[0]["url"]
    assert readdb.main(["--data", str(data.root), "--url", home + "#fragment"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["url"] == home
    assert readdb.main(["--data", str(data.root), "--url", "http://nowhere.test/"]) == 1


def test_robots_txt_is_cached_across_rounds(crawled, spark, web):
    data, _, log = crawled
    asked = [e["host"] for e in log if e["path"] == "/robots.txt"]
    assert sorted(asked) == sorted(web.site.hosts[: web.site.ring])  # once in 3 rounds
    cached = spark.read.format("delta").load(data.robots).collect()
    assert {r["host"] for r in cached} == set(asked)
    assert {r["http_status"] for r in cached} == {200, 404}


def test_cdxj_indexes_find_every_capture_in_the_warc_files(crawled):
    from warcio.archiveiterator import ArchiveIterator

    data, _, _ = crawled
    for name in [n for n in data.segment_names() if data.segment(n).done("fetched")]:
        segment = data.segment(name)
        warcs = sorted(w.rsplit("/", 1)[-1] for w in segment.warc_files())
        folder = f"{segment.path}/cdxj"
        assert segment.storage.list_files(folder) == [f"{w}.cdxj" for w in warcs]
        indexed = []
        for index in segment.storage.list_files(folder):
            lines = segment.storage.read_bytes(f"{folder}/{index}").decode().splitlines()
            assert lines == sorted(lines)  # sorted by SURT key, as pywb expects
            for line in lines:
                key, stamp, fields = line.split(" ", 2)
                entry = json.loads(fields)
                with open(f"{segment.warc_dir}/{entry['filename']}", "rb") as warc:
                    warc.seek(int(entry["offset"]))
                    record = next(iter(ArchiveIterator(warc)))
                    assert record.rec_headers.get_header("WARC-Target-URI") == entry["url"]
                    assert record.rec_type in ("response", "revisit")
                indexed.append(entry["url"])
        answered = [u for u in warc_page_responses(segment)]
        assert set(answered) <= set(indexed)


def test_a_crawl_that_ends_says_how_many_due_urls_it_left(crawled_copy, capsys):
    from deltalake import DeltaTable

    from crawldb.selection import due_rows
    from jobs import crawl
    from lib.clock import now_ms
    from lib.config import load_config

    data, _, _ = crawled_copy
    capsys.readouterr()
    assert crawl.main(["--rounds", "1", "--data", str(data.root), *crawl_conf_args()]) == 0
    printed = capsys.readouterr().out.splitlines()
    columns = ["fetch_time", "score", "reason", "generate_time"]
    table = DeltaTable(data.crawldb).to_pyarrow_table(columns=columns)
    due = due_rows(table, load_config().as_dict(), now_ms())
    assert due.num_rows > 0  # the test web's frontier: links one round did not reach
    deferred = sum(reason == st.REASON_DEFERRED for reason in due.column("reason").to_pylist())
    assert printed[-1] == (
        f"crawl: {due.num_rows} URLs due were left for a later crawl ({deferred} of them "
        "deferred by a round's tail): crawl --rounds N goes on with them"
    )
