"""What an operator reads after the three-round crawl: the metrics table, readdb's host
list and rounds, readseg's listing and records."""

import json
from collections import Counter

import pytest

from engine.tables.metrics import read_metrics
from jobs import readdb, readseg
from lib import vocabulary as st

pytestmark = [pytest.mark.spark, pytest.mark.web]


def updated_segments(data) -> list[str]:
    return [n for n in data.segment_names() if data.segment(n).done("updated")]


def test_metrics_table_has_every_stage_of_every_round(crawled, spark):
    data, _, _ = crawled
    metrics = read_metrics(spark, data.root).collect()
    runs = Counter((m["job"], m["segment"]) for m in metrics if m["segment"])
    assert max(runs.values()) == 1  # the latest row per job and segment (reruns append)
    for name in updated_segments(data):
        segment = data.segment(name)
        by_job = {m["job"]: m for m in metrics if m["segment"] == name}
        assert set(by_job) >= {"generate", "fetch", "parse", "updatedb"}
        fetch = by_job["fetch"]
        marker = segment.summary("fetched")
        assert fetch["figures"]["pages"] == marker["pages"] > 0
        assert fetch["figures"]["pages_per_second"] == marker["pages_per_second"]
        outcomes = {k: v for k, v in fetch["figures"].items() if k.startswith("outcomes.")}
        assert sum(outcomes.values()) == marker["urls"]
        assert sum(h["pages"] for h in fetch["hosts"]) == marker["pages"]
        assert sum(h["bytes"] for h in fetch["hosts"]) == marker["bytes"]
        assert by_job["updatedb"]["figures"]["new"] == segment.summary("updated")["new"]
        assert by_job["generate"]["figures"]["urls"] == segment.summary("generated")["urls"]
    injects = sorted((m for m in metrics if m["job"] == "inject"), key=lambda m: m["finished"])
    first = injects[0]  # the crawl's own; other tests inject again into the same crawl
    assert first["figures"]["urls"] == 3 and first["figures"]["malformed_lines"] == 1


def test_readdb_hosts_lists_the_largest_hosts_by_status(crawled, capsys):
    data, rows, _ = crawled
    capsys.readouterr()
    assert readdb.main(["--data", str(data.root), "--hosts", "3", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    per_host = Counter(r["host"] for r in rows)
    assert [h["urls"] for h in listed] == sorted(per_host.values(), reverse=True)[:3]
    for host in listed:
        statuses = Counter(r["status"] for r in rows if r["host"] == host["host"])
        assert {s: host.get(s, 0) for s in st.DB_STATUSES} == {
            s: statuses.get(s, 0) for s in st.DB_STATUSES
        }


def test_readdb_stats_shows_the_crawl_round_by_round(crawled, capsys):
    data, _, _ = crawled
    capsys.readouterr()
    assert readdb.main(["--data", str(data.root), "--stats"]) == 0
    printed = capsys.readouterr().out
    for name in updated_segments(data):
        pages = data.segment(name).summary("fetched")["pages"]
        assert f"round {name}:\tgenerated " in printed
        assert f"fetched {pages}," in printed
    assert "top hosts:" in printed


def test_readseg_lists_segments_and_reads_their_records(crawled, spark, capsys, tmp_path):
    data, _, _ = crawled
    capsys.readouterr()
    assert readseg.main(["--data", str(data.root), "--list", "--json"]) == 0
    listing = {e["segment"]: e for e in json.loads(capsys.readouterr().out)}
    first = updated_segments(data)[0]
    assert listing[first]["stages"] == ["generated", "fetched", "parsed", "updated"]
    assert listing[first]["fetched"] == data.segment(first).summary("fetched")["pages"]

    out = tmp_path / "dump"
    assert readseg.main(["--data", str(data.root), "--dump", first, str(out)]) == 0
    dumped = [json.loads(line) for f in out.glob("part-*.json") for line in f.open()]
    listed = spark.read.format("delta").load(data.segment(first).table("fetchlist"))
    assert {r["url"] for r in listed.collect()} <= {d["url"] for d in dumped}
    page = next(d for d in dumped if (d.get("parse") or {}).get("parse_status") == "success")
    assert page["fetch"]["http_status"] == 200 and "content" not in page["fetch"]
    assert page["parse"]["outlinks"]

    capsys.readouterr()
    assert readseg.main(["--data", str(data.root), "--get", first, page["url"]]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["parse"]["title"] == page["parse"]["title"]
    # A segment that does not exist: a mistake of the caller's.
    assert readseg.main(["--data", str(data.root), "--get", "19990101000000", page["url"]]) == 2


def test_a_failing_job_exits_255_not_1(spark, tmp_path, capsys):
    # A crawldb whose log is broken: the job fails (a missing crawldb is the user's
    # mistake instead, exit 2, tests/test_usage_errors.py).
    log = tmp_path / "data" / "crawldb" / "_delta_log"
    log.mkdir(parents=True)
    (log / "00000000000000000000.json").write_text("not a Delta commit\n")
    assert readdb.main(["--data", str(tmp_path / "data"), "--stats"]) == 255
    assert "readdb: failed (exit code 255)" in capsys.readouterr().err


def test_readdb_top_n_lists_the_urls_of_highest_score(crawled, capsys):
    data, rows, _ = crawled
    capsys.readouterr()
    assert readdb.main(["--data", str(data.root), "--topN", "5", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    ranked = sorted(rows, key=lambda r: (-(r["score"] or 0), -(r["pagerank"] or 0), r["url"]))
    assert [row["url"] for row in listed] == [row["url"] for row in ranked[:5]]
    by_url = {row["url"]: row for row in rows}
    for row in listed:
        assert (row["score"], row["status"]) == (
            by_url[row["url"]]["score"],
            by_url[row["url"]]["status"],
        )
    assert readdb.main(["--data", str(data.root), "--topN", "3"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["score", "pagerank", "status", "url"] and len(table) == 4
    assert table[1].split()[-1] == ranked[0]["url"]
