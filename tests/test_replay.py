"""A re-crawl replays in a real pywb as the pages it archived, byte for byte.

Host 0's /fresh/1-12 carry validators: the odd ones never change, and the re-crawl's
conditional requests get 304s (``server-not-modified`` revisits); the even ones change
(responses). Its /page/1-4 carry none and never change: the re-crawl brings the same
payload (``identical-payload-digest`` revisits). Both passes' WARC files are served by
``wayback`` (pywb) from Trawl's own CDXJ index, and every response and every revisit,
asked at its own WARC-Date, must come back as the payload it stands for. warcio's
``check`` and cdxj-indexer read the same files as Trawl wrote and indexed them.
"""

import base64
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from crawlruns import web_crawl_args
from servers import free_port, serving
from warcio.archiveiterator import ArchiveIterator
from weblog import entries_for

from api.job_views import job_pages
from api.tables import ApiTables
from engine.runtime.layout import DataDir
from jobs import crawl, maintain
from lib.archive.warc import REVISIT_IDENTICAL, REVISIT_NOT_MODIFIED
from testweb.site import fresh_changes

pytestmark = [pytest.mark.spark, pytest.mark.web]
AGENT_URL = "https://trawl.invalid/test-replay"
BIN = Path(sys.executable).parent
FRESH, PAGES = 12, 4


def recrawl(web, data: Path, agent: str, *settings: str, between=None) -> DataDir:
    """A crawl of host 0's /fresh/ and /page/ URLs, then (after ``between``) a second
    pass 31 days on, once the pages under /fresh/ that change have changed."""
    base = web.site.base(0)
    urls = [f"{base}/fresh/{k}" for k in range(1, FRESH + 1)]
    urls += [f"{base}/page/{k}" for k in range(1, PAGES + 1)]
    seeds = data.parent / f"{data.name}-seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in urls))
    args = web_crawl_args(data, agent, "db.max.depth=0", *settings)
    assert crawl.main(["--seeds", str(seeds), "--rounds", "1", *args]) == 0
    if between is not None:
        between(args)
    web.advance_epoch()
    try:
        assert crawl.main(["--rounds", "1", "--adddays", "31", *args]) == 0
    finally:
        web.advance_epoch(-1)
    return DataDir.at(str(data))


def records(data: DataDir) -> list[dict]:
    """Every response and revisit record of the crawl, with its payload (Content-Encoding
    undone), in file order."""
    found = []
    for name in data.segment_names():
        for path in sorted(Path(data.segment(name).warc_dir).glob("*.warc.gz")):
            with open(path, "rb") as stream:
                for record in ArchiveIterator(stream, check_digests="raise"):
                    if record.rec_type not in ("response", "revisit"):
                        continue
                    headers = record.rec_headers
                    found.append(
                        {
                            "type": record.rec_type,
                            "id": headers.get_header("WARC-Record-ID"),
                            "url": headers.get_header("WARC-Target-URI"),
                            "date": headers.get_header("WARC-Date"),
                            "profile": headers.get_header("WARC-Profile"),
                            "refers_to": headers.get_header("WARC-Refers-To"),
                            "status": record.http_headers and record.http_headers.get_statuscode(),
                            "payload": record.content_stream().read(),
                        }
                    )
    return found


@pytest.fixture(scope="module")
def replayed(spark, web, tmp_path_factory):
    root = tmp_path_factory.mktemp("replay")
    data = recrawl(web, root / "data", AGENT_URL)
    return data, records(data)


@pytest.fixture(scope="module")
def wayback(replayed, tmp_path_factory):
    """A running pywb whose collection ``trawl`` is the crawl's WARC files, indexed by
    the CDXJ files Trawl wrote beside them: ``GET(timestamp, url) -> response``."""
    data, _ = replayed
    home = tmp_path_factory.mktemp("pywb")
    archive = home / "archive"
    archive.mkdir()
    lines = []
    for name in data.segment_names():
        segment = data.segment(name)
        for path in Path(segment.warc_dir).glob("*.warc.gz"):
            (archive / path.name).symlink_to(path)
        for path in Path(segment.cdxj_dir).glob("*.cdxj"):
            lines += path.read_text().splitlines(keepends=True)
    (home / "index.cdxj").write_text("".join(sorted(lines)))
    (home / "config.yaml").write_text(
        f"collections:\n  trawl:\n    index_paths: {home / 'index.cdxj'}\n"
        f"    archive_paths: {archive}/\n"
    )
    port = free_port()
    command = [str(BIN / "wayback"), "-p", str(port), "-b", "127.0.0.1", "-t", "2"]
    base = f"http://127.0.0.1:{port}/trawl"
    with serving(command, f"http://127.0.0.1:{port}/", home / "wayback.log", cwd=home):

        def get(date: str, url: str) -> requests.Response:
            stamp = "".join(ch for ch in date[:19] if ch.isdigit())
            return requests.get(f"{base}/{stamp}id_/{url}", timeout=30, allow_redirects=False)

        yield get


def test_both_revisit_profiles_name_the_capture_they_stand_for(replayed, web):
    data, found = replayed
    base = web.site.base(0)
    by_id = {record["id"]: record for record in found}
    revisits = [r for r in found if r["type"] == "revisit"]
    profiles = {r["url"]: r["profile"] for r in revisits}
    unchanged = [f"{base}/fresh/{k}" for k in range(1, FRESH + 1) if not fresh_changes(k)]
    same = [f"{base}/page/{k}" for k in range(1, PAGES + 1)]
    assert profiles == {url: REVISIT_NOT_MODIFIED for url in unchanged} | {
        url: REVISIT_IDENTICAL for url in same
    }
    for revisit in revisits:
        earlier = by_id[revisit["refers_to"]]  # WARC-Refers-To: a record of the archive
        assert earlier["type"] == "response" and earlier["url"] == revisit["url"]
        assert earlier["date"] < revisit["date"] and earlier["payload"]


def test_pywb_replays_every_capture_as_its_payload(replayed, wayback):
    _, found = replayed
    by_id = {record["id"]: record for record in found}
    checked = {"response": 0, REVISIT_NOT_MODIFIED: 0, REVISIT_IDENTICAL: 0}
    for record in found:
        expected = record if record["type"] == "response" else by_id[record["refers_to"]]
        answer = wayback(record["date"], record["url"])
        assert str(answer.status_code) == expected["status"], (record["url"], answer.text[:300])
        assert answer.content == expected["payload"], (record["url"], record["profile"])
        checked[record["profile"] or "response"] += 1
    assert checked["response"] >= FRESH + PAGES + FRESH // 2  # both passes' pages, robots.txt
    assert checked == {
        "response": checked["response"],
        REVISIT_NOT_MODIFIED: FRESH // 2,
        REVISIT_IDENTICAL: PAGES,
    }


def test_the_api_s_raw_content_of_a_revisited_page_is_its_body(replayed, spark):
    data, found = replayed
    by_id = {record["id"]: record for record in found}
    revisited = {r["url"]: by_id[r["refers_to"]]["payload"] for r in found if r["refers_to"]}
    tables = ApiTables(data)
    rows = tables.crawldb_rows(sorted(revisited))
    pages = job_pages(tables, [rows[url] for url in sorted(revisited)], raw=True)
    assert {page.url: base64.b64decode(page.body_base64) for page in pages} == revisited


def test_warcio_and_cdxj_indexer_agree_with_the_records_and_their_index(replayed):
    data, _ = replayed
    for name in data.segment_names():
        segment = data.segment(name)
        for path in sorted(Path(segment.warc_dir).glob("*.warc.gz")):
            checked = subprocess.run(
                [str(BIN / "warcio"), "check", str(path)], capture_output=True, text=True
            )
            assert checked.returncode == 0, checked.stdout + checked.stderr
            indexed = subprocess.run(
                [str(BIN / "cdxj-indexer"), "--sort", str(path)],
                capture_output=True,
                text=True,
                check=True,
            )
            written = Path(segment.cdxj_dir) / f"{path.name}.cdxj"
            expected = indexed.stdout.replace(f'"filename": "{path}"', f'"filename": "{path.name}"')
            assert written.read_text() == expected


def test_a_capture_whose_warc_files_are_gone_is_archived_whole_again(spark, web, tmp_path):
    """segments.retention.archive removed the first pass's WARC files: the second pass
    asks without validators and writes full responses, never a revisit naming a record
    that is gone."""
    agent = "https://trawl.invalid/test-replay-gone"

    def retire(args):
        retention = [
            "--conf",
            "segments.retention.count=0",
            "--conf",
            "segments.retention.archive=true",
        ]
        assert maintain.main([*args, *retention]) == 0

    data = recrawl(web, tmp_path / "data", agent, between=retire)
    found = records(data)
    assert [r["type"] for r in found] == ["response"] * (FRESH + PAGES)  # the second pass
    asked = [e for e in entries_for(web, agent) if e["path"].startswith(("/fresh/", "/page/"))]
    assert len(asked) == 2 * (FRESH + PAGES)
    assert {e["status"] for e in asked} == {200}  # no 304: nothing asked conditionally
