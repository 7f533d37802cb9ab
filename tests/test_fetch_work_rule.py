"""crawldb.fetch_work: the fetch tasks' work rows, held to a row-by-row oracle written
from the module's docstring on random tables (placed and unplaced hosts, fresh, stale
and missing times, fetched and never fetched URLs), whole and cut into batches."""

import random

import pyarrow as pa
import pytest

from crawldb import fetch_work

HOSTS = [f"h{i}.test" for i in range(12)]


def tables(seed: int):
    rng = random.Random(seed)
    placed = {host: rng.randrange(4) for host in rng.sample(HOSTS, 7)}
    times = [None, 500, 999, 1000, 1001, 5000]
    robots = [
        {"host": h, "fetched_at": rng.choice(times), "http_status": rng.choice([200, 404])}
        for h in HOSTS
    ]
    for row in robots:
        row["content"] = f"robots of {row['host']}".encode()
    probes = [{"host": h, "probed_at": rng.choice(times)} for h in rng.sample(HOSTS, 9)]
    crawldb = [
        {"url": f"http://{h}/{k}", "host": h, "last_fetch_time": rng.choice([None, 1, 7])}
        for h in HOSTS
        for k in range(rng.randrange(4))
    ]
    moments = {h: 10_000 + i for i, h in enumerate(rng.sample(HOSTS, 5))}
    return placed, robots, probes, crawldb, moments


def oracle(placed, robots, probes, crawldb, moments, oldest):
    rows = []
    for r in robots:
        if r["host"] in placed and r["fetched_at"] is not None and r["fetched_at"] >= oldest:
            rows.append(
                {
                    "host": r["host"],
                    "partition": placed[r["host"]],
                    "robots_status": r["http_status"],
                    "robots_body": r["content"],
                }
            )
    for p in probes:
        if p["host"] in placed and p["probed_at"] is not None and p["probed_at"] >= oldest:
            rows.append({"host": p["host"], "partition": placed[p["host"]], "probed": True})
    for c in crawldb:
        if c["host"] in placed and c["last_fetch_time"] is not None:
            rows.append({"host": c["host"], "partition": placed[c["host"]], "known_url": c["url"]})
    for host, moment in moments.items():
        if host in placed:
            rows.append({"host": host, "partition": placed[host], "not_before": moment})
    return rows


def as_keys(rows):
    names = [name for name, _ in fetch_work.WORK_COLUMNS]
    return sorted(repr(tuple(row.get(n) for n in names)) for row in rows)


def rule(placed, robots, probes, crawldb, moments, oldest, batch):
    """The rule's rows, each table given in batches of ``batch`` rows (as Spark's
    tasks give them)."""

    def cut(rows):
        return [pa.Table.from_pylist(rows[i : i + batch]) for i in range(0, len(rows), batch)]

    parts = [fetch_work.robots_rows(t, placed, oldest) for t in cut(robots)]
    parts += [fetch_work.probe_rows(t, placed, oldest) for t in cut(probes)]
    parts += [fetch_work.known_rows(t, placed) for t in cut(crawldb)]
    parts.append(fetch_work.pacing_rows(moments, placed))
    table = pa.concat_tables(parts)
    assert table.schema == fetch_work.work_schema()
    return table.to_pylist()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("batch", [1, 5, 1000])
def test_the_cached_rows_are_the_oracles(seed, batch):
    placed, robots, probes, crawldb, moments = tables(seed)
    expected = oracle(placed, robots, probes, crawldb, moments, 1000)
    got = rule(placed, robots, probes, crawldb, moments, 1000, batch)
    assert as_keys(got) == as_keys(expected)


def test_every_kind_of_row_is_met():
    """The random tables reach every branch: each kind kept, and each refused."""
    kinds = {"robots_status": 0, "probed": 0, "known_url": 0, "not_before": 0}
    refused = {"unplaced": 0, "no time": 0, "stale": 0, "never fetched": 0}
    for seed in range(8):
        placed, robots, probes, crawldb, moments = tables(seed)
        for row in oracle(placed, robots, probes, crawldb, moments, 1000):
            for kind in kinds:
                kinds[kind] += row.get(kind) is not None
        placed_robots = [r for r in robots if r["host"] in placed]
        refused["unplaced"] += len(robots) - len(placed_robots)
        refused["no time"] += sum(r["fetched_at"] is None for r in placed_robots)
        refused["stale"] += sum((r["fetched_at"] or 1000) < 1000 for r in placed_robots)
        refused["never fetched"] += sum(c["last_fetch_time"] is None for c in crawldb)
    assert all(kinds.values()), kinds
    assert all(refused.values()), refused


def test_the_fetch_lists_rows_keep_their_columns_and_null_the_others():
    listed = pa.table(
        {
            "url": ["http://a.test/1"],
            "host": ["a.test"],
            "depth": pa.array([2], pa.int32()),
            "score": [0.5],
            "etag": ['"x"'],
            "last_modified": [None],
            "partition": pa.array([3], pa.int64()),
        }
    )
    (row,) = fetch_work.listed_rows(listed).to_pylist()
    assert row["url"] == "http://a.test/1" and row["partition"] == 3 and row["depth"] == 2
    assert row["tier"] is None and row["capture_time"] is None and row["known_url"] is None
