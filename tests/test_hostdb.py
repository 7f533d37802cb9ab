"""The hostdb: one row per host, kept by updatedb from what each round changed (Nutch's
updatehostdb). The rule on its own (no Spark): its counts equal a plain count on random
rounds, and partial rows split across any number of tasks fold to the same rows; then
after the three-round crawl of the test web, the hostdb read by delta-rs has one row per
host whose counts equal the crawldb's and whose fetches equal the segments', and
readhostdb prints it."""

import json
import os
import random
import subprocess
from collections import Counter

import pyarrow as pa
import pytest
from conftest import ROOT
from deltalake import DeltaTable

from crawldb.hostdb import (
    OUTCOME_COLUMNS,
    STATUS_COLUMNS,
    fetch_figures,
    host_rows,
    partial_table,
    robots_figures,
    status_changes,
)
from crawldb.schema import HOSTDB
from lib import vocabulary as st
from lib.config import load_config

HOSTS = ["a.test", "b.test", "c.test"]
ORIGINS = [*(st.ORIGIN_FETCHLIST,) * 6, st.ORIGIN_REDIRECT, st.ORIGIN_OUTLINK]
ORIGINS += [st.ORIGIN_ROBOTS, st.ORIGIN_SITEMAP, st.ORIGIN_PROBE]


def random_crawldb(rng: random.Random, size: int) -> dict[str, tuple[str, str]]:
    """url -> (host, status)."""
    return {
        f"http://{host}/{i}": (host, rng.choice(st.DB_STATUSES))
        for i in range(size)
        for host in [rng.choice(HOSTS)]
    }


def counted(crawldb: dict) -> dict[str, dict]:
    """The plain count the hostdb must equal: host -> {column: URLs}."""
    counts: dict[str, Counter] = {}
    for host, status in crawldb.values():
        counts.setdefault(host, Counter())[STATUS_COLUMNS[status]] += 1
        counts[host]["urls"] += 1
    return {host: dict(c) for host, c in counts.items()}


def url_counts(rows: pa.Table) -> dict[str, dict]:
    columns = ["urls", *STATUS_COLUMNS.values()]
    return {row["host"]: {c: row[c] for c in columns if row[c]} for row in rows.to_pylist()}


def changes_table(before: dict, after: dict, urls) -> pa.Table:
    olds = [before.get(url, (None, None)) for url in urls]
    return pa.table(
        {
            "host": pa.array([after[u][0] for u in urls], pa.string()),
            "status": pa.array([after[u][1] for u in urls], pa.string()),
            "old_host": pa.array([o[0] for o in olds], pa.string()),
            "old_status": pa.array([o[1] for o in olds], pa.string()),
        }
    )


@pytest.mark.parametrize("seed", range(5))
def test_counts_kept_from_the_rounds_changes_equal_a_count_of_the_crawldb(seed):
    rng = random.Random(seed)
    crawldb = random_crawldb(rng, 60)
    everything = changes_table({}, crawldb, list(crawldb))
    rows = host_rows(partial_table([]), status_changes(everything), recount=True)
    assert url_counts(rows) == counted(crawldb)
    for _ in range(4):  # rounds: some URLs change status, some are new
        after = dict(crawldb)
        for url in rng.sample(sorted(crawldb), 20):
            after[url] = (crawldb[url][0], rng.choice(st.DB_STATUSES))
        fresh = [f"http://{rng.choice(HOSTS)}/new-{rng.random()}" for _ in range(8)]
        after |= {url: (url.split("/")[2], st.UNFETCHED) for url in fresh}
        touched = {url for url in after if after[url] != crawldb.get(url)}
        touched |= set(rng.sample(sorted(crawldb), 5))  # rewritten, status unchanged
        parts = status_changes(changes_table(crawldb, after, sorted(touched)))
        updated = {row["host"]: row for row in rows.to_pylist()}
        for row in host_rows(rows, parts).to_pylist():
            updated[row["host"]] = row
        rows = partial_table(list(updated.values()))
        crawldb = after
        assert url_counts(rows) == counted(crawldb)
    # A recount over a hostdb with a host gone from the crawldb drops it.
    kept = {url: v for url, v in crawldb.items() if v[0] != "c.test"}
    recount = host_rows(rows, status_changes(changes_table({}, kept, list(kept))), recount=True)
    assert url_counts(recount) == counted(kept)
    assert {r["fetches_success"] for r in recount.to_pylist()} == {0}


def random_fetch(rng: random.Random, size: int) -> pa.Table:
    rows = []
    for i in range(size):
        origin = rng.choice(ORIGINS)
        outcome = rng.choice(st.FETCH_OUTCOMES)
        answered = outcome not in (st.ROBOTS_DENIED, st.SKIPPED) and rng.random() < 0.8
        rows.append(
            {
                "host": rng.choice(HOSTS),
                "origin": origin,
                "fetch_status": outcome,
                "reason": rng.choice([None, st.REASON_CIRCUIT, st.REASON_TIMEOUT]),
                "http_status": rng.choice([200, 404, 503]) if answered else None,
                "duration_ms": rng.randrange(1, 900) if answered else None,
                "fetched_at": 1_700_000_000_000 + i * 10,
                "redirect_to": None,
            }
        )
    return pa.Table.from_pylist(rows)


@pytest.mark.parametrize("seed", range(5))
def test_a_round_s_figures_fold_the_same_from_any_number_of_tasks(seed):
    rng = random.Random(seed)
    fetch = random_fetch(rng, 200)
    whole = host_rows(partial_table([]), fetch_figures(fetch, "s1"))
    cuts = sorted(rng.sample(range(1, 200), rng.randrange(1, 12)))
    pieces = [fetch.slice(a, b - a) for a, b in zip([0, *cuts], [*cuts, 200], strict=True)]
    split = host_rows(partial_table([]), pa.concat_tables([fetch_figures(p, "s1") for p in pieces]))
    for one, other in zip(whole.to_pylist(), split.to_pylist(), strict=True):
        mean = one.pop("mean_response_ms"), other.pop("mean_response_ms")
        assert mean[0] == pytest.approx(mean[1])
        assert one == other
    requests = fetch.to_pylist()
    for row in whole.to_pylist():
        mine = [r for r in requests if r["host"] == row["host"]]
        pages = [r for r in mine if r["origin"] not in ("robots", "sitemap", "probe")]
        for outcome, column in OUTCOME_COLUMNS.items():
            assert row[column] == sum(r["fetch_status"] == outcome for r in pages)
        answered = [r["duration_ms"] for r in mine if r["http_status"] is not None]
        assert row["responses"] == len(answered)
        assert row["mean_response_ms"] == pytest.approx(sum(answered) / len(answered))
        assert row["held_back"] == sum(r["fetch_status"] in ("retry", "skipped") for r in pages)
        assert row["circuit_open"] == any(r["reason"] == st.REASON_CIRCUIT for r in pages)
        assert row["last_fetch_time"] == max(r["fetched_at"] for r in mine)
        robots = [r for r in mine if r["origin"] == "robots"]
        if robots:
            assert row["robots_status"] == robots[-1]["http_status"]


def test_the_next_round_adds_its_fetches_and_replaces_its_back_off_figures():
    first = pa.Table.from_pylist(
        [
            {
                "host": "a.test",
                "origin": "fetchlist",
                "fetch_status": status,
                "reason": reason,
                "http_status": code,
                "duration_ms": ms,
                "fetched_at": at,
                "redirect_to": None,
            }
            for status, reason, code, ms, at in [
                ("success", None, 200, 100, 1000),
                ("retry", st.REASON_CIRCUIT, None, None, 2000),
            ]
        ]
    )
    rows = host_rows(partial_table([]), fetch_figures(first, "s1"))
    assert rows.to_pylist()[0]["held_back"] == 1 and rows.to_pylist()[0]["circuit_open"]
    second = first.slice(0, 1).set_column(5, "duration_ms", pa.array([300], pa.int64()))
    row = host_rows(rows, fetch_figures(second, "s2")).to_pylist()[0]
    assert (row["fetches_success"], row["fetches_retry"], row["responses"]) == (2, 1, 2)
    assert row["mean_response_ms"] == pytest.approx(200.0)
    assert (row["held_back"], row["circuit_open"], row["last_segment"]) == (0, False, "s2")


def test_robots_txt_gives_the_crawl_delay_and_the_pause_and_the_newest_answer_wins():
    conf = load_config(overrides=["fetcher.server.delay=1.0"]).as_dict()
    answers = pa.table(
        {
            "host": ["a.test", "b.test", "a.test"],
            "http_status": pa.array([200, 404, 200], pa.int32()),
            "content": [
                b"User-agent: *\nCrawl-delay: 4\n",
                b"",
                b"User-agent: *\nCrawl-delay: 0.5",
            ],
            "fetched_at": [2000, 1000, 1000],
        }
    )
    rows = {
        r["host"]: r
        for r in host_rows(partial_table([]), robots_figures(answers, conf)).to_pylist()
    }
    assert (rows["a.test"]["crawl_delay"], rows["a.test"]["delay"]) == (4.0, 4.0)
    assert rows["a.test"]["robots_time"] == 2000
    assert (rows["b.test"]["crawl_delay"], rows["b.test"]["delay"]) == (None, 1.0)
    assert rows["b.test"]["robots_status"] == 404


def test_the_hostdb_layout_holds_a_column_for_each_status_and_outcome():
    names = set(HOSTDB.names)
    assert set(STATUS_COLUMNS.values()) <= names and set(OUTCOME_COLUMNS.values()) <= names


@pytest.mark.spark
@pytest.mark.web
def test_the_crawl_s_hostdb_has_a_row_per_host_and_the_crawldb_s_counts(crawled):
    data, rows, _ = crawled
    table = DeltaTable(data.hostdb)
    hostdb = table.to_pyarrow_table().to_pylist()  # delta-rs reads it
    # The rounds after the first kept the counts from their changes (merged, not recounted).
    assert [h["operation"] for h in table.history()][:2] == ["MERGE", "MERGE"]
    by_host = {row["host"]: row for row in hostdb}
    assert len(by_host) == len(hostdb)
    expected = counted({row["url"]: (row["host"], row["status"]) for row in rows})
    assert set(by_host) == set(expected)
    for host, counts in expected.items():
        columns = ["urls", *STATUS_COLUMNS.values()]
        assert {c: by_host[host][c] for c in columns if by_host[host][c]} == counts, host
    fetched = Counter()
    for name in data.segment_names():
        table = DeltaTable(data.segment(name).table("fetch"))
        for r in table.to_pyarrow_table(columns=["host", "origin", "fetch_status"]).to_pylist():
            if r["origin"] not in ("robots", "sitemap", "probe"):
                fetched[(r["host"], r["fetch_status"])] += 1
    for (host, outcome), count in fetched.items():
        assert by_host[host][OUTCOME_COLUMNS[outcome]] == count, (host, outcome)
    asked = {host for host, _ in fetched}
    assert asked and all(by_host[h]["robots_time"] and by_host[h]["responses"] for h in asked)

    host = max(hostdb, key=lambda row: row["urls"])["host"]
    done = subprocess.run(
        [str(ROOT / "submit.sh"), "readhostdb", "--data", str(data.root), "--host", host, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
        check=True,
    )
    printed = json.loads(done.stdout)
    assert printed["urls"] == by_host[host]["urls"]
    assert printed["urls_fetched"] == by_host[host]["urls_fetched"]
