"""The fetcher against a hostile and broken web, each case proven from the request log."""

import itertools
import time
import tracemalloc
from urllib.parse import urlsplit

import pytest
from conftest import TEST_SERVER_DELAY, web_conf
from warcio.archiveiterator import ArchiveIterator
from weblog import by_host, entries_for, politeness_violations

from lib import vocabulary as st
from lib.archive.warc import WarcFile
from lib.fetching.fetcher import PartitionFetcher
from lib.url.normalize import host_of
from lib.vocabulary import REASON_TIME_LIMIT

pytestmark = pytest.mark.web
_tags = itertools.count()


def fetch(web, urls, *overrides, consume=list):
    """Fetch ``urls`` in one partition; page rows by URL, robots rows, this run's log
    (``consume``: takes the fetcher's row iterator, gives the rows in a list)."""
    agent_url = f"https://trawl.invalid/behaviour-{next(_tags)}"
    conf = web_conf(agent_url, "fetcher.soft404.probe=false", *overrides)
    rows = [{"url": u, "host": host_of(u), "depth": 1, "score": 1.0} for u in urls]
    results = consume(PartitionFetcher(conf, None).run(rows))
    pages = {r["url"]: r for r in results if r["origin"] != "robots"}
    robots = [r for r in results if r["origin"] == "robots"]
    log = entries_for(web, agent_url)
    assert politeness_violations(log, lambda host: TEST_SERVER_DELAY) == []
    return pages, robots, log


def paths(log, host=None):
    return [e["path"] for e in log if host is None or e["host"] == host]


def special(web, role):
    index = web.site.host_with(role)
    return web.site.base(index), web.site.hosts[index]


def test_robots_unavailable_disallows_the_host_for_the_round(web):
    base, host = special(web, "robots_unavailable")
    pages, robots, log = fetch(web, [f"{base}/page/1", f"{base}/page/2"])
    assert {r["fetch_status"] for r in pages.values()} == {st.RETRY}
    assert {r["reason"] for r in pages.values()} == {st.REASON_ROBOTS_UNAVAILABLE}
    assert paths(log, host) == ["/robots.txt"]
    assert robots[0]["http_status"] == 503


def test_robots_redirect_is_followed(web):
    base, host = special(web, "robots_redirect")
    pages, _, log = fetch(web, [f"{base}/secret/x", f"{base}/page/1"])
    assert pages[f"{base}/secret/x"]["fetch_status"] == st.ROBOTS_DENIED
    assert pages[f"{base}/page/1"]["fetch_status"] == st.SUCCESS
    # then /sitemap.xml: the robots.txt names no sitemap
    assert paths(log, host) == ["/robots.txt", "/robots-real.txt", "/page/1", "/sitemap.xml"]


def test_each_robots_hop_has_its_row_pointing_at_its_own_record(web, tmp_path):
    """Issue 40: the row of /robots.txt said 200 and pointed at /robots-real.txt's record;
    now each hop has its row, its status and its own WARC record."""
    base, host = special(web, "robots_redirect")
    conf = web_conf(
        "https://trawl.invalid/behaviour-robots-hops",
        "fetcher.soft404.probe=false",
        "sitemap.fetch=false",
    )
    path = tmp_path / "hops.warc.gz"
    warc = WarcFile(str(path), {"software": "test"})
    rows = [{"url": f"{base}/page/1", "host": host_of(base), "depth": 1, "score": 1.0}]
    results = list(PartitionFetcher(conf, warc).run(rows))
    warc.close()
    robots = {r["url"]: r for r in results if r["origin"] == "robots"}
    assert set(robots) == {f"{base}/robots.txt", f"{base}/robots-real.txt"}
    hop, final = robots[f"{base}/robots.txt"], robots[f"{base}/robots-real.txt"]
    assert hop["http_status"] == 301 and hop["redirect_to"] == f"{base}/robots-real.txt"
    assert final["http_status"] == 200 and final.get("redirect_to") is None
    assert {hop["host"], final["host"]} == {host_of(base)}  # the robots cache's key
    with open(path, "rb") as handle:
        for row in results:
            handle.seek(row["warc_offset"])
            record = next(iter(ArchiveIterator(handle)))
            assert record.rec_headers.get_header("WARC-Target-URI") == row["url"]


def test_only_the_first_500_kib_of_robots_is_parsed(web):
    base, host = special(web, "robots_oversize")
    pages, _, log = fetch(web, [f"{base}/early/x", f"{base}/late/x"])
    assert pages[f"{base}/early/x"]["fetch_status"] == st.ROBOTS_DENIED
    assert pages[f"{base}/late/x"]["http_status"] == 404  # allowed: its rule came too late
    assert "/early/x" not in paths(log, host)


def test_robots_404_allows_everything(web):
    base = web.site.base(3)  # the ring's last host has no robots.txt
    pages, _, log = fetch(web, [f"{base}/private/secret"])
    assert pages[f"{base}/private/secret"]["http_status"] == 404
    assert "/private/secret" in paths(log)


def test_crawl_delay_too_long_skips_the_host(web):
    base, host = special(web, "crawl_delay_too_long")
    pages, _, log = fetch(web, [f"{base}/page/1"])
    assert pages[f"{base}/page/1"]["fetch_status"] == st.SKIPPED
    assert pages[f"{base}/page/1"]["reason"] == st.REASON_CRAWL_DELAY
    assert paths(log, host) == ["/robots.txt"]


def test_429_retry_after_seconds_is_honoured(web):
    base = web.site.base(0)
    pages, _, log = fetch(web, [f"{base}/ratelimit/1"])
    row = pages[f"{base}/ratelimit/1"]
    assert row["fetch_status"] == st.SUCCESS and row["attempts"] == 2
    tries = [e for e in log if e["path"] == "/ratelimit/1"]
    assert [e["status"] for e in tries] == [429, 200]
    assert tries[1]["start"] - tries[0]["end"] >= 1.0 - 0.005


def test_503_retry_after_http_date_is_honoured(web):
    base = web.site.base(1)
    pages, _, log = fetch(web, [f"{base}/unavailable-date"])
    assert pages[f"{base}/unavailable-date"]["fetch_status"] == st.SUCCESS
    tries = [e for e in log if e["path"] == "/unavailable-date"]
    assert [e["status"] for e in tries] == [503, 200]
    assert tries[1]["start"] - tries[0]["end"] >= 0.5  # the date has whole seconds


def test_circuit_breaker_skips_a_failing_host(web):
    base, host = special(web, "failing")
    urls = [f"{base}/page/{k}" for k in range(1, 11)]
    pages, _, log = fetch(
        web, urls, "fetcher.max.exceptions.per.queue=3", "fetcher.backoff.max=0.3"
    )
    outcomes = [pages[u]["fetch_status"] for u in urls]
    assert outcomes[:3] == [st.RETRY] * 3
    assert outcomes[3:] == [st.SKIPPED] * 7
    assert {pages[u]["reason"] for u in urls[3:]} == {"host_circuit_open"}
    assert len([p for p in paths(log, host) if p.startswith("/page/")]) == 3


def test_trickling_server_is_cut_off_at_the_time_limit(web):
    base = web.site.base(0)
    # No sitemap after it: it would first wait out the pause a slow answer earns.
    pages, _, log = fetch(web, [f"{base}/trickle"], "http.time.limit=1", "sitemap.fetch=false")
    row = pages[f"{base}/trickle"]
    assert row["truncated"] and row["duration_ms"] < 3000
    assert "time.limit" in row["error_detail"]


def test_read_timeout(web):
    base = web.site.base(0)
    # Nothing after the timeout: a retry, or the host's sitemap, would first wait out the
    # pause a slow answer earns (about ten times its duration).
    pages, _, _ = fetch(
        web,
        [f"{base}/delay/3000"],
        "http.timeout=500",
        "fetcher.max.retries.in.round=0",
        "sitemap.fetch=false",
    )
    row = pages[f"{base}/delay/3000"]
    assert row["fetch_status"] == st.RETRY and row["reason"] == st.REASON_TIMEOUT
    assert row["duration_ms"] < 3000  # cut before the server answered


def test_compression_bomb_is_bounded(web):
    base = web.site.base(0)
    web.site.respond(web.site.hosts[0], "/bomb")  # the server's own 20 MB, made beforehand
    tracemalloc.start()
    pages, _, _ = fetch(web, [f"{base}/bomb"], "http.content.limit=1000000")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    row = pages[f"{base}/bomb"]
    assert row["truncated"] and row["content_length"] == 1_000_000
    assert peak < 8_000_000, f"peak {peak} bytes for a 20 MB bomb"


def test_truncation_at_the_size_limit(web):
    base = web.site.base(0)
    pages, _, log = fetch(web, [f"{base}/large"], "http.content.limit=50000")
    row = pages[f"{base}/large"]
    assert row["truncated"] and row["content_length"] == 50000
    # The server may notice the hang-up late: the next request waits twice the pause.
    cut = (row["fetched_at"] + row["duration_ms"]) / 1000
    after = [e["start"] for e in log if e["path"] == "/sitemap.xml"]
    assert after and after[0] - cut >= 2 * TEST_SERVER_DELAY - 0.01


def test_redirect_loop_is_stopped(web):
    base = web.site.base(0)
    pages, _, log = fetch(web, [f"{base}/loop/a"])
    assert pages[f"{base}/loop/a"]["redirect_to"] == f"{base}/loop/b"
    assert pages[f"{base}/loop/b"]["redirect_to"] == f"{base}/loop/a"
    assert sorted(p for p in paths(log) if p.startswith("/loop/")) == ["/loop/a", "/loop/b"]


def test_private_addresses_are_refused_by_default(web):
    base = web.site.base(0)
    pages, _, log = fetch(web, [f"{base}/page/1"], "fetcher.allow.private.networks=false")
    assert pages[f"{base}/page/1"]["fetch_status"] == st.NOT_FOUND
    assert pages[f"{base}/page/1"]["reason"] == "private_address"
    assert log == []  # not even robots.txt was asked
    allowed, _, log = fetch(web, [f"{base}/page/1"], "fetcher.allow.private.networks=true")
    assert allowed[f"{base}/page/1"]["fetch_status"] == st.SUCCESS and log


def test_broken_responses_are_recorded_not_raised(web):
    base = web.site.base(2)
    pages, _, _ = fetch(web, [f"{base}/reset", f"{base}/garbage", "ftp://x.test/a"])
    assert pages[f"{base}/reset"]["fetch_status"] == st.RETRY
    assert pages[f"{base}/reset"]["reason"] == st.REASON_CONNECTION
    assert pages[f"{base}/garbage"]["reason"] == "malformed_response"


def test_slow_server_gets_a_longer_pause(web):
    base, host = special(web, "slow")
    _, _, log = fetch(web, [f"{base}/page/{k}" for k in range(1, 4)])
    requests = [e for e in by_host(log)[host] if e["path"].startswith("/page/")]
    gaps = [b["start"] - a["end"] for a, b in zip(requests, requests[1:], strict=False)]
    assert len(gaps) == 2 and min(gaps) >= 10 * 0.15 * 0.9  # ~10 x the response time


def test_a_stalled_consumer_does_not_earn_the_host_a_longer_pause(web):
    """Rows not taken for a while (Spark busy with the first batch, a collection pause)
    hold up the answers already in, but the server was quick: its pause stays short."""
    quick, quick_host = web.site.base(2), web.site.hosts[2]
    other, other_host = web.site.base(3), web.site.hosts[3]

    def stalled(rows):
        taken = []
        for row in rows:
            taken.append(row)
            if row["host"] == quick_host and row["origin"] != "robots":
                time.sleep(0.6)  # while the other host's 200 ms answer is on its way
        return taken

    urls = [f"{quick}/page/1", f"{other}/delay/200", f"{other}/page/1"]
    _, _, log = fetch(web, urls, "sitemap.fetch=false", consume=stalled)
    delayed, after = [e for e in by_host(log)[other_host] if e["path"] != "/robots.txt"]
    assert delayed["path"] == "/delay/200"
    # ~10 x its 0.2 s at most; charged with the 0.6 s stall it would have been 6 s.
    assert after["start"] - delayed["end"] < 3.0
    assert after["start"] - delayed["end"] >= TEST_SERVER_DELAY


def test_round_time_limit_sends_the_urls_not_reached_back(web):
    base, host = web.site.base(2), web.site.hosts[2]
    urls = [f"{base}/page/{k}" for k in range(1, 31)]
    began = time.time()
    # 0.02 minutes: 1.2 s, room for about five requests at the test web's 0.25 s delay.
    pages, _, log = fetch(web, urls, "fetcher.timelimit.mins=0.02", "sitemap.fetch=false")
    ended = time.time()
    assert set(pages) == set(urls)  # every URL has its row: nothing lost
    reached = [u for u in urls if pages[u]["reason"] != REASON_TIME_LIMIT]
    left = [u for u in urls if pages[u]["reason"] == REASON_TIME_LIMIT]
    assert 1 <= len(reached) <= 6 and len(left) == len(urls) - len(reached)
    assert all(pages[u]["fetch_status"] == st.SUCCESS for u in reached)
    assert {pages[u]["fetch_status"] for u in left} == {st.SKIPPED}
    assert {pages[u]["attempts"] for u in left} == {0}
    requested = [e["path"] for e in log if e["host"] == host and e["path"].startswith("/page/")]
    assert sorted(requested) == sorted(urlsplit(u).path for u in reached)
    assert max(e["start"] for e in log) <= began + 1.2 + 0.05  # none started after the limit
    assert ended - began < 1.2 + 2.0  # the round ended at the limit, not after the host


def _gaps(log, host, prefix="/"):
    requests = [e for e in by_host(log)[host] if e["path"] != "/robots.txt"]
    requests = [e for e in requests if e["path"].startswith(prefix)]
    return [
        (b["path"], b["start"] - a["end"]) for a, b in zip(requests, requests[1:], strict=False)
    ]


def test_one_slow_answer_delays_the_next_request_once(web):
    base, host = web.site.base(0), web.site.hosts[0]
    urls = [f"{base}/trickle", *(f"{base}/page/{k}" for k in range(1, 4))]
    # Cut at 1 s: the adaptive pause (10 x 1 s, capped at 2 s here) plus, for a cut, the
    # host's own delay once; then the host answers fast and is back at its pace at once.
    pages, _, log = fetch(
        web,
        urls,
        "http.time.limit=1",
        "fetcher.adaptive.delay.max=2",
        "sitemap.fetch=false",
        "fetcher.round.tail.defer=false",
    )
    gaps = _gaps(log, host)
    assert [path for path, _ in gaps] == ["/page/1", "/page/2", "/page/3"]
    # From the client's cut (the server logs the hang-up when it next writes).
    cut = pages[urls[0]]
    cut_end = (cut["fetched_at"] + cut["duration_ms"]) / 1000
    page1 = next(e for e in log if e["path"] == "/page/1")
    after_slow = page1["start"] - cut_end
    assert 2 + TEST_SERVER_DELAY - 0.05 <= after_slow < 2 + TEST_SERVER_DELAY + 1.0
    after_fast = [gap for _, gap in gaps[1:]]
    assert all(gap < TEST_SERVER_DELAY + 0.3 for gap in after_fast), gaps


def test_a_huge_page_cut_at_the_size_limit_is_not_a_slow_server(web):
    base, host = web.site.base(3), web.site.hosts[3]
    # 1 MB of a page streamed at about 5 MB/s: cut after ~0.2 s. Its first byte came at
    # once, so no adaptive pause: the host's delay, twice for the cut.
    pages, _, log = fetch(
        web, [f"{base}/huge", f"{base}/page/1"], "http.content.limit=1000000", "sitemap.fetch=false"
    )
    assert pages[f"{base}/huge"]["truncated"] and pages[f"{base}/huge"]["duration_ms"] >= 100
    [(path, gap)] = _gaps(log, host)
    assert path == "/page/1" and gap < 2 * TEST_SERVER_DELAY + 0.5


def test_a_host_that_would_hold_the_round_is_deferred_not_waited_for(web):
    fast = [web.site.base(0), web.site.base(3)]
    slow, slow_host = web.site.base(2), web.site.hosts[2]
    later = [f"{slow}/page/{k}" for k in range(1, 4)]
    urls = [f"{slow}/trickle", *later]
    urls += [f"{base}/page/{k}" for base in fast for k in range(1, 21)]
    began = time.time()
    # The trickle is cut at 2 s and earns a 20 s pause; the fast hosts' 40 URLs take about
    # 5 s: the slow host's 3 URLs would hold the round past its budget, 1.5 x 5 s + 0.5 s
    # here.
    pages, _, log = fetch(
        web, urls, "http.time.limit=2", "sitemap.fetch=false", "fetcher.round.tail.slack=0.5"
    )
    ended = time.time()
    assert set(pages) == set(urls)  # every URL has its row
    assert {pages[u]["reason"] for u in later} == {st.REASON_DEFERRED}
    assert {pages[u]["fetch_status"] for u in later} == {st.SKIPPED}
    assert {pages[u]["attempts"] for u in later} == {0}
    assert not [e for e in log if e["host"] == slow_host and e["path"].startswith("/page/")]
    assert all(pages[u]["reason"] != st.REASON_DEFERRED for u in urls if not u.startswith(slow))
    trickle_end = max(e["end"] for e in log if e["path"] == "/trickle")
    assert ended < trickle_end + 20.0 - 5.0  # the round did not wait out the slow host's pause
    assert ended - began < 17.0


def test_a_trickle_still_on_its_way_at_the_rounds_end_is_cut_there(web):
    fast = [web.site.base(0), web.site.base(3)]
    slow = web.site.base(2)
    urls = [f"{slow}/trickle"] + [f"{base}/page/{k}" for base in fast for k in range(1, 21)]
    began = time.time()
    # The fast hosts take about 5 s; the trickle, about 20 s, is cut at the round's budget
    # (1.5 x ~5 s + 1 s here), not at http.time.limit (60 s by default).
    pages, _, _ = fetch(web, urls, "sitemap.fetch=false", "fetcher.round.tail.slack=1")
    ended = time.time()
    row = pages[f"{slow}/trickle"]
    assert row["fetch_status"] == st.SUCCESS and row["truncated"]
    assert "round's end" in row["error_detail"]
    assert 1000 <= row["duration_ms"] < 15_000
    assert ended - began < 16.0
    assert {pages[u]["http_status"] for u in urls[1:]} == {200, 404}  # all asked (8 pages)
