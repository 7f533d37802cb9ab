"""Rounds that end when their work is done (issue 35), proven on a web of fast hosts and a
few stragglers (a page trickling for 6 s, a 12 MB page cut at the size limit, pages that
answer 503 every other ask): from the request log, the fetch tables and the crawldb."""

import contextlib
import io
import json
import math
import re

import pytest
from conftest import web_conf_args
from weblog import by_host, disallowed_requests, entries_for, politeness_violations

from lib import vocabulary as st
from testweb.server import TestWeb, loopback_hosts

pytestmark = [pytest.mark.spark, pytest.mark.web]

HOSTS, STRAGGLERS, PAGES = 40, 3, 8
DELAY, TRICKLE_S = 0.25, 6.0
AGENT_URL = "https://trawl.invalid/test-round-tail"


@pytest.fixture(scope="module")
def tail_web(tmp_path_factory):
    log = tmp_path_factory.mktemp("tailweb") / "requests.jsonl"
    hosts = loopback_hosts(HOSTS, subnet=46)
    server = TestWeb(
        hosts, 0, log, crawl_delay=0.6, stragglers=STRAGGLERS, trickle_s=TRICKLE_S
    ).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tail_crawl(spark, tail_web, tmp_path_factory):
    """Three rounds over the web: data dir, the crawl's output, its requests, fetch rows
    and metrics rows of each round (oldest first)."""
    from engine.runtime.layout import DataDir
    from jobs import crawl

    root = tmp_path_factory.mktemp("tailcrawl")
    seeds = root / "seeds.txt"
    seeds.write_text("\n".join(tail_web.seeds) + "\n")
    settings = web_conf_args(
        AGENT_URL, "http.content.limit=2000000", "job.progress.interval=1", delay=DELAY
    )
    args = ["--seeds", str(seeds), "--rounds", "3", "--data", str(root / "data")]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        code = crawl.main([*args, *settings])
    (root / "crawl.out").write_text(output.getvalue())  # for a failing test's reader
    assert code == 0
    data = DataDir.at(root / "data")
    names = data.segment_names()
    fetched = [
        [
            r.asDict()
            for r in spark.read.format("delta").load(data.segment(n).table("fetch")).collect()
        ]
        for n in names
    ]
    metrics = spark.read.format("delta").load(f"{root}/data/metrics").where("job = 'fetch'")
    rounds = sorted((r.asDict() for r in metrics.collect()), key=lambda r: r["finished"])
    return data, output.getvalue(), entries_for(tail_web, AGENT_URL), fetched, rounds


def _round_requests(log, round_row):
    end = round_row["finished"].timestamp()
    begin = end - round_row["seconds"]
    return sorted((e for e in log if begin - 1 <= e["start"] <= end), key=lambda e: e["start"])


def test_a_straggler_is_deferred_and_fetched_first_next_round(tail_crawl, tail_web):
    _, _, log, fetched, _ = tail_crawl
    trickle_host = tail_web.site.hosts[HOSTS - STRAGGLERS]
    assert tail_web.site.straggler(HOSTS - STRAGGLERS) == "trickle"
    deferred = [r for r in fetched[1] if r["reason"] == st.REASON_DEFERRED]
    assert deferred, "round 2 deferred nothing"
    assert {r["host"] for r in deferred} == {trickle_host}
    assert {r["fetch_status"] for r in deferred} == {st.SKIPPED}
    urls = {r["url"] for r in deferred}
    # Not requested in round 2; decided in round 3 (asked, or refused by robots.txt), and
    # asked at most once in all.
    asked = [f"http://{e['host']}:{tail_web.site.port}{e['path']}" for e in log]
    assert all(asked.count(url) <= 1 for url in urls)
    third = {r["url"]: r for r in fetched[2]}
    assert all(third[url]["fetch_status"] != st.SKIPPED for url in urls)
    assert any(third[url]["fetch_status"] == st.SUCCESS for url in urls)
    # Generated again at once: all in round 3's fetch list.
    listed = {r["url"] for r in fetched[2] if r["origin"] == "fetchlist"}
    assert urls <= listed


def test_each_round_ends_within_its_budget_and_waits_no_pause_out(tail_crawl, tail_web):
    _, _, log, _, rounds = tail_crawl
    for number, row in enumerate(rounds, 1):
        requests = _round_requests(log, row)
        first = requests[0]["start"]
        starts = [e["start"] - first for e in requests]
        t95 = starts[math.ceil(0.95 * len(starts)) - 1]
        # The fetcher's own rule (looked at every second), from the wire.
        assert starts[-1] <= 1.5 * t95 + 10 + 1.5, (number, t95, starts[-1])
    trickled = [e for e in log if e["path"] == "/page/1" and e["end"] - e["start"] > TRICKLE_S / 2]
    assert len(trickled) == 1
    trickle_round = next(r for r in rounds if trickled[0] in _round_requests(log, r))
    # The round did not wait out the 30 s pause the trickle earned.
    assert _round_requests(log, trickle_round)[-1]["start"] < trickled[0]["end"] + 20


def test_the_pace_after_a_slow_or_cut_answer_is_the_hosts_own(tail_crawl, tail_web):
    _, _, log, fetched, rounds = tail_crawl
    site = tail_web.site
    huge_host = site.hosts[HOSTS - STRAGGLERS + 1]
    assert site.straggler(HOSTS - STRAGGLERS + 1) == "huge"
    cut = [r for rows in fetched for r in rows if r["host"] == huge_host and r["truncated"]]
    assert len(cut) == 1 and cut[0]["content_length"] == 2_000_000
    # A cut counts the host's delay twice, never an adaptive pause: the huge page is big,
    # the server is not slow. From the client's cut (the server logs when it notices).
    cut_end = cut[0]["fetched_at"].timestamp() + cut[0]["duration_ms"] / 1000
    later = [e for e in by_host(log)[huge_host] if e["start"] >= cut_end]
    assert later and later[0]["start"] - cut_end < 2 * DELAY + 1.0
    # Round by round, every host is back at its own pace after any slow answer: within
    # a round, no gap is longer than one adaptive pause after a slow answer.
    for row in rounds:
        for host, requests in by_host(_round_requests(log, row)).items():
            slow = [a for a in requests if a["end"] - a["start"] > 1.0]
            gaps = [
                b["start"] - a["end"]
                for a, b in zip(requests, requests[1:], strict=False)
                if a not in slow
            ]
            assert all(gap < 2 * DELAY + 1.5 for gap in gaps), (host, gaps)


def test_progress_lines_and_stats_tell_the_deferred_urls_and_a_truthful_eta(tail_crawl):
    from jobs import readdb

    data, output, _, fetched, _ = tail_crawl
    deferred = sum(1 for r in fetched[1] if r["reason"] == st.REASON_DEFERRED)
    assert f"{deferred} deferred" in output  # fetch's summary line of round 2
    stats = io.StringIO()
    with contextlib.redirect_stdout(stats):
        assert readdb.main(["--data", str(data.root), "--stats", "--json"]) == 0
    rounds = json.loads(stats.getvalue())["rounds"]
    assert [r.get("deferred") for r in rounds][1] == deferred
    lines = [line for line in output.splitlines() if line.startswith("fetch: ") and "ETA" in line]
    # Once a task has reported (a URL done), the ETA is known; before, nothing is.
    started = [line for line in lines if not re.match(r"fetch: 0/", line)]
    etas = [re.search(r"ETA (\S+),", line).group(1) for line in started]
    assert etas and all(eta != "unknown" for eta in etas)
    assert any("deferred" in line for line in lines)


def test_nothing_lost_and_politeness_holds(tail_crawl, tail_web):
    data, _, log, fetched, _ = tail_crawl
    delays = {h: DELAY for h in tail_web.site.hosts} | {tail_web.site.hosts[1]: 0.6}
    assert politeness_violations(log, delays.get) == []
    assert disallowed_requests(log, tail_web.site) == []
    # A same-host redirect is followed in the round whatever the crawldb knows of its
    # target (so /old-page deferred to the round after /page/3 fetches /page/3 again):
    # those hops are left out; every other URL is answered 200 once at most.
    followed = {r["url"] for rows in fetched for r in rows if r["origin"] == "redirect"}
    port = tail_web.site.port
    ok = [
        (e["host"], e["path"])
        for e in log
        if e["status"] == 200
        and e["path"] != "/robots.txt"
        and f"http://{e['host']}:{port}{e['path']}" not in followed
    ]
    assert len(ok) == len(set(ok)), "a URL was fetched twice"
    # Every URL of round 2's list was decided by the end of round 3 (deferred ones too).
    listed = {r["url"] for r in fetched[1] if r["origin"] == "fetchlist"}
    decided = {r["url"] for rows in fetched[1:] for r in rows if r["fetch_status"] != st.SKIPPED}
    assert listed <= decided
