"""The partition fetcher against the local test web, without Spark."""

import pytest
from conftest import web_conf
from warcio.archiveiterator import ArchiveIterator
from weblog import by_host, entries_for, host_delays, politeness_violations

from lib import vocabulary as st
from lib.archive.warc import WarcFile
from lib.fetching.fetcher import PartitionFetcher
from lib.url.normalize import host_of

pytestmark = pytest.mark.web
AGENT_URL = "https://trawl.invalid/test-fetcher"


@pytest.fixture(scope="module")
def fetched(web, tmp_path_factory):
    conf = web_conf(
        AGENT_URL,
        "http.content.limit=100000",
        "fetcher.threads.fetch=4",
        "http.redirect.max=3",
        "fetcher.soft404.probe=false",
    )
    base0, base1 = web.site.base(0), web.site.base(1)
    urls = (
        web.seeds
        + [
            base0 + p
            for p in (
                "/private/secret",
                "/old-page",
                "/gzip",
                "/large",
                "/status/503",
                "/redirect/4",
                "/data.txt",
            )
        ]
        + [f"{base1}/page/{k}" for k in (1, 2, 3)]
    )
    rows = [{"url": u, "host": host_of(u), "depth": 1, "score": 1.0} for u in urls]
    path = tmp_path_factory.mktemp("warc") / "part.warc.gz"
    warc = WarcFile(str(path), {"software": "test"})
    results = {r["url"]: r for r in PartitionFetcher(conf, warc).run(rows)}
    warc.close()
    return results, entries_for(web, AGENT_URL), path


def test_one_result_per_url_and_followed_redirects(fetched, web):
    results, _, _ = fetched
    base0 = web.site.base(0)
    assert results[f"{base0}/"]["fetch_status"] == st.SUCCESS
    assert results[f"{base0}/old-page"]["fetch_status"] == st.MOVED
    assert results[f"{base0}/old-page"]["redirect_to"] == f"{base0}/page/3"
    assert results[f"{base0}/page/3"]["origin"] == "redirect"
    chain = [f"{base0}/redirect/{n}" for n in (4, 3, 2, 1)]
    assert [results[u]["fetch_status"] for u in chain] == [st.TEMP_MOVED] * 4
    assert results[chain[-1]]["redirect_to"] == f"{base0}/page/1"  # hop limit reached
    assert f"{base0}/page/1" not in results
    pages = [r for r in results.values() if r["origin"] not in ("robots", "sitemap")]
    assert len(pages) == 14 + 4  # the list, the redirect target, three more chain hops


def test_robots_denied_urls_are_never_requested(fetched, web):
    results, log, _ = fetched
    denied = results[f"{web.site.base(0)}/private/secret"]
    assert denied["fetch_status"] == st.ROBOTS_DENIED and denied.get("http_status") is None
    assert not [e for e in log if e["path"].startswith("/private/")]
    robots = [e["host"] for e in log if e["path"] == "/robots.txt"]
    assert sorted(robots) == sorted(web.site.hosts[:4])  # once per host


def test_bodies_statuses_and_limits(fetched, web):
    results, _, _ = fetched
    base0 = web.site.base(0)
    assert b"Compressed" in results[f"{base0}/gzip"]["content"]
    large = results[f"{base0}/large"]
    assert large["truncated"] and large["content_length"] == 100000
    failing = results[f"{base0}/status/503"]
    assert failing["fetch_status"] == st.RETRY and failing["reason"] == "http_503"
    assert results[f"{base0}/data.txt"]["content_type"] == "text/plain"


def test_politeness_on_the_wire(fetched, web):
    _, log, _ = fetched
    assert politeness_violations(log, host_delays(web)) == []
    host1 = by_host(log)[web.site.hosts[1]]
    # robots.txt, /sitemap.xml (robots names none), home, 3 pages, spaced by the Crawl-delay
    assert len(host1) == 6


def test_warc_has_a_response_per_answered_request(fetched):
    results, log, path = fetched
    with open(path, "rb") as handle:
        records = list(ArchiveIterator(handle, check_digests="raise"))
    responses = [
        r.rec_headers.get_header("WARC-Target-URI") for r in records if r.rec_type == "response"
    ]
    assert len(responses) == len(log)  # robots.txt files included
    answered = {u for u, r in results.items() if r.get("http_status") is not None}
    assert answered <= set(responses)
    for url, row in results.items():
        if row.get("warc_offset") is not None:
            with open(path, "rb") as handle:
                handle.seek(row["warc_offset"])
                record = next(iter(ArchiveIterator(handle)))
                assert record.rec_headers.get_header("WARC-Target-URI") == url
                # each test host is its own loopback address: the one connected to
                address = url.split("//", 1)[1].split(":", 1)[0]
                assert record.rec_headers.get_header("WARC-IP-Address") == address
                assert row["ip"] == address


def test_a_redirect_to_a_page_fetched_in_an_earlier_round_is_recorded_not_followed(web):
    conf = web_conf("https://trawl.invalid/test-fetcher-known", "fetcher.soft404.probe=false")
    base = web.site.base(2)
    rows = [{"url": f"{base}/old-page", "host": host_of(base), "depth": 1, "score": 1.0}]
    known = {f"{base}/page/3"}
    results = list(PartitionFetcher(conf, None, known_urls=known).run(rows))
    pages = {r["url"]: r for r in results if r["origin"] in ("fetchlist", "redirect")}
    assert list(pages) == [f"{base}/old-page"]
    assert pages[f"{base}/old-page"]["redirect_to"] == f"{base}/page/3"
    asked = {e["path"] for e in entries_for(web, "https://trawl.invalid/test-fetcher-known")}
    assert "/old-page" in asked and "/page/3" not in asked


def test_the_fetcher_and_its_archive_run_on_the_clock_they_are_given(web, tmp_path):
    """The clock and record IDs are parameters (defaulting to the real ones): a test can
    fix them, and every time the fetcher writes is then the one given."""
    conf = web_conf("https://trawl.invalid/test-fetcher-clock", "fetcher.soft404.probe=false")
    base = web.site.base(3)
    rows = [
        {"url": f"{base}/page/{k}", "host": host_of(base), "depth": 1, "score": 1.0} for k in (1, 2)
    ]
    path = tmp_path / "clock.warc.gz"
    ids = iter(range(1, 100))
    warc = WarcFile(
        str(path),
        {"software": "test"},
        clock=lambda: 1_600_000_000.0,
        new_id=lambda: f"<urn:uuid:00000000-0000-4000-8000-{next(ids):012d}>",
    )
    results = list(PartitionFetcher(conf, warc, clock=lambda: 1_600_000_000.0).run(rows))
    warc.close()
    assert {r["fetched_at"] for r in results} == {1_600_000_000_000}
    with open(path, "rb") as handle:
        records = list(ArchiveIterator(handle))
    assert {r.rec_headers.get_header("WARC-Date") for r in records} == {
        "2020-09-13T12:26:40.000000Z"
    }
    assert [r.rec_headers.get_header("WARC-Record-ID")[-3:-1] for r in records] == [
        f"{n:02d}" for n in range(1, len(records) + 1)
    ]


def test_a_host_in_its_pause_from_the_last_round_is_held_back(web):
    """``not_before``: a host asked at the end of the last round waits out its pause
    (robots.txt included); another host of the same task goes at once."""
    import time

    agent = "https://trawl.invalid/test-fetcher-paced"
    conf = web_conf(agent, "fetcher.soft404.probe=false", "sitemap.fetch=false")
    held, free = web.site.base(0), web.site.base(2)
    rows = [
        {"url": f"{b}/page/1", "host": host_of(b), "depth": 1, "score": 1.0} for b in (held, free)
    ]
    moment = time.time() + 1.5
    list(PartitionFetcher(conf, None, not_before={host_of(held): moment}).run(rows))
    asked = by_host(entries_for(web, agent))
    assert min(e["start"] for e in asked[host_of(held)]) >= moment - 0.05
    assert min(e["start"] for e in asked[host_of(free)]) < moment - 1.0
