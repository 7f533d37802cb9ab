"""generate's selection (crawldb.selection), the one rule both executors run, held to an
oracle written row by row from its docstring, on random crawldbs that reach every
branch: due or not, scored below the minimum, missing values, deferred rows, dedup
variants with redirects, host and domain caps, the time limit's cap with and without a
pause, the tiers' budget, and the round's shares. Both executors run these functions
(tests/test_driver_rounds.py compares their fetch lists on a real crawl)."""

import math
import random
from collections import Counter, defaultdict

import pyarrow as pa
import pytest

from crawldb import selection
from crawldb.partitioning import urls_within
from crawldb.priority import NEVER_FETCHED, TIERS, priority, tier_quotas
from engine.executors.generate_plan import budget_quotas, driver_selection
from lib import vocabulary as st
from lib.config import load_config
from lib.url.domains import registered_domain

NOW = 1_700_000_000_000
HOSTS = ("a.x.test", "b.x.test", "www.y.test", "y.test", "z.test")
PAUSES = {"a.x.test": 2.0, "b.x.test": 0.0, "www.y.test": 0.5}


def random_rows(seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for index in range(rng.randint(0, 160)):
        host = rng.choice(HOSTS)
        url = f"http://{host}/p{index}"
        key = f"http://{host.removeprefix('www.')}/p{rng.randint(0, 40)}"
        rows.append(
            {
                "url": url,
                "host": host,
                "status": rng.choice(
                    [None, st.UNFETCHED, st.FETCHED, st.REDIR_PERM, st.REDIR_TEMP]
                ),
                "score": rng.choice([None, -1.0, 0.0, rng.random() * 3]),
                "depth": rng.choice([None, 0, 1, 2, 3]),
                "etag": None,
                "last_modified": None,
                "payload_digest": None,
                "capture_time": rng.choice([None, NOW - 5000]),
                "capture_segment": None if index % 3 else "20260101000000",
                "capture_record_id": None if index % 3 else f"<urn:uuid:{index}>",
                "dedup_key": rng.choice([None, key, key]),
                "pagerank": rng.choice([None, None, rng.random()]),
                "last_fetch_time": rng.choice([None, NOW - rng.randint(0, 10**8)]),
                "fetch_interval": rng.choice([60, 3600, 86400]),
                "reason": rng.choice([None, None, st.REASON_DEFERRED, "http_error"]),
                "change_count": rng.choice([None, 0, 2]),
                "revisit_count": rng.choice([None, 0, 3]),
                "retries": rng.choice([None, 0, 1, 2]),
                "fetch_time": rng.choice([None, NOW - 1, NOW, NOW + 1, NOW - 10**6]),
                "generate_time": rng.choice([None, None, NOW - 10, NOW - 10**9]),
            }
        )
    return rows


SCHEMA = pa.schema(
    [
        *((name, pa.string()) for name in ("url", "host", "status")),
        ("score", pa.float64()),
        ("depth", pa.int32()),
        *((name, pa.string()) for name in ("etag", "last_modified", "payload_digest")),
        ("capture_time", pa.int64()),
        *((name, pa.string()) for name in ("capture_segment", "capture_record_id")),
        ("dedup_key", pa.string()),
        ("pagerank", pa.float64()),
        ("last_fetch_time", pa.int64()),
        ("fetch_interval", pa.int32()),
        ("reason", pa.string()),
        *((name, pa.int32()) for name in ("change_count", "revisit_count", "retries")),
        ("fetch_time", pa.int64()),
        ("generate_time", pa.int64()),
    ]
)

CASES = {
    "default": [],
    "host cap": ["generate.max.count=3"],
    "domain cap": ["generate.max.count=4", "generate.count.mode=domain"],
    "time limit": ["fetcher.timelimit.mins=0.1", "fetcher.server.delay=0.0"],
    "both caps": ["generate.max.count=5", "fetcher.timelimit.mins=0.05"],
    "budget": ["generate.topN=17"],
    "generated": ["generate.update.crawldb=true", "crawl.gen.delay=1000000"],
    "budget and cap": ["generate.topN=9", "generate.max.count=2", "generate.min.score=0.5"],
}


# The oracle: the rule written row by row, from crawldb/selection.py's docstring.


def ascending(value):
    return (value is not None, value if value is not None else 0)


def best_first(row):
    return (not row["deferred"], -row["priority"], ascending(row["depth"]), row["url"])


def oracle(rows: list[dict], conf, pauses: dict) -> list[dict]:
    due = [
        dict(row)
        for row in rows
        if row["fetch_time"] is not None
        and row["fetch_time"] <= NOW
        and row["score"] is not None
        and row["score"] >= conf["generate.min.score"]
        and not (
            conf["generate.update.crawldb"]
            and row["generate_time"] is not None
            and row["generate_time"] + conf["crawl.gen.delay"] > NOW
        )
    ]
    top_rank = max((r["pagerank"] for r in due if r["pagerank"] is not None), default=None)
    top_score = max((r["score"] for r in due if r["score"] is not None), default=None)
    for row in due:
        importance = 0.0
        if top_score and row["score"] is not None:
            importance = row["score"] / top_score
        if top_rank and row["pagerank"] is not None:
            importance = row["pagerank"] / top_rank
        elapsed = NEVER_FETCHED
        if row["last_fetch_time"] is not None:
            elapsed = max((NOW - row["last_fetch_time"]) / 1000.0, 0.0) / row["fetch_interval"]
        counts = [row[c] or 0 for c in ("change_count", "revisit_count", "depth", "retries")]
        row["priority"] = priority(importance, elapsed, *counts, conf, exp=math.exp)
        row["deferred"] = row["reason"] == st.REASON_DEFERRED
        if row["deferred"] or row["priority"] >= conf["generate.tier.high.min"]:
            row["tier"] = "high"
        else:
            row["tier"] = "medium" if row["priority"] >= conf["generate.tier.medium.min"] else "low"
        row["pause"] = pauses.get(row["host"], conf["fetcher.server.delay"])
    variants = defaultdict(list)
    for row in due:
        variants[row["dedup_key"] or row["url"]].append(row)

    def variant_order(row):
        redirect = (
            None if row["status"] is None else int(row["status"] in (st.REDIR_PERM, st.REDIR_TEMP))
        )
        return (ascending(redirect), *best_first(row))

    due = [min(group, key=variant_order) for group in variants.values()]
    return oracle_budget(oracle_cap(due, conf), conf)


def oracle_cap(due: list[dict], conf) -> list[dict]:
    limit, minutes = conf["generate.max.count"], conf["fetcher.timelimit.mins"]
    if limit < 0 and minutes < 0:
        return due
    groups = defaultdict(list)
    for row in due:
        by_domain = conf["generate.count.mode"] == "domain"
        groups[registered_domain(row["host"]) if by_domain else row["host"]].append(row)
    kept = []
    for group in groups.values():
        for rank, row in enumerate(sorted(group, key=best_first), start=1):
            caps = [limit] if limit >= 0 else []
            if minutes >= 0 and row["pause"] > 0:
                caps.append(urls_within(row["pause"], minutes))
            if not caps or rank <= min(caps):
                kept.append(row)
    return kept


def oracle_budget(due: list[dict], conf) -> list[dict]:
    if conf["generate.topN"] < 0:
        return due
    counts = Counter(row["tier"] for row in due)
    shares = conf["generate.tier.shares"]
    quotas = tier_quotas(conf["generate.topN"], [counts.get(t, 0) for t in TIERS], shares)
    chosen = []
    for name, quota in zip(TIERS, quotas, strict=True):
        tier = [row for row in due if row["tier"] == name]
        chosen += sorted(tier, key=lambda r: (-r["priority"], ascending(r["depth"]), r["url"]))[
            :quota
        ]
    return chosen


def as_table(rows):
    return pa.Table.from_pylist(rows, schema=SCHEMA)


@pytest.mark.parametrize("case", CASES)
def test_the_selection_is_the_rule_row_by_row(case):
    conf = load_config(overrides=CASES[case]).as_dict()
    compared = 0
    for seed in range(40):
        rows = random_rows(seed)
        chosen = driver_selection(as_table(rows), conf, NOW, lambda hosts: PAUSES)
        expected = {row["url"]: row for row in oracle(rows, conf, PAUSES)}
        got = {row["url"]: row for row in chosen.to_pylist()}
        assert sorted(got) == sorted(expected), (case, seed)
        for url, row in got.items():
            want = expected[url]
            assert row["priority"] == pytest.approx(want["priority"], rel=1e-12), (seed, url)
            assert (row["tier"], row["deferred"], row["pause"]) == (
                want["tier"],
                want["deferred"],
                want["pause"],
            )
        compared += len(got)
    assert compared > 100


def test_a_budget_split_over_parts_is_the_budget_of_the_whole():
    """By Spark each partition gives its best keys; the limits over all parts admit
    exactly what the whole table's best would."""
    conf = load_config(overrides=["generate.topN=23"]).as_dict()
    for seed in range(20):
        chosen = driver_selection(as_table(random_rows(seed)), conf, NOW, lambda hosts: {})
        unbudgeted = {**conf, "generate.topN": -1}
        whole = driver_selection(as_table(random_rows(seed)), unbudgeted, NOW, lambda h: {})
        pieces = [whole.slice(start, 7) for start in range(0, whole.num_rows, 7)]
        quotas = budget_quotas(conf, [selection.tier_counts(piece) for piece in pieces])
        keys = pa.concat_tables([selection.best_keys(piece, quotas) for piece in pieces])
        limits = selection.budget_limits(keys, quotas)
        parts = pa.concat_tables([selection.within_limits(piece, limits) for piece in pieces])
        assert sorted(parts.column("url").to_pylist()) == sorted(chosen.column("url").to_pylist())


def test_shares_keep_a_slow_hosts_best_deferred_first():
    conf = load_config().as_dict()
    for seed in range(20):
        chosen = driver_selection(as_table(random_rows(seed)), conf, NOW, lambda hosts: {})
        shares = {"a.x.test": 2, "y.test": 0}
        kept = selection.within_shares(chosen, shares).to_pylist()
        rows = chosen.to_pylist()
        for host in HOSTS:
            mine = [row for row in rows if row["host"] == host]
            order = sorted(
                mine,
                key=lambda r: (not r["deferred"], r["tier"] != "high", -r["priority"], r["url"]),
            )
            wanted = order[: shares[host]] if host in shares else order
            assert sorted(r["url"] for r in kept if r["host"] == host) == sorted(
                r["url"] for r in wanted
            ), (seed, host)


def test_the_figures_of_the_hosts():
    conf = load_config().as_dict()
    chosen = driver_selection(as_table(random_rows(3)), conf, NOW, lambda hosts: PAUSES)
    figures = selection.host_figures(chosen)
    rows = chosen.to_pylist()
    for host, (urls, pause) in figures.items():
        assert urls == sum(1 for row in rows if row["host"] == host)
        assert pause == PAUSES.get(host, conf["fetcher.server.delay"])
    assert selection.tier_counts(chosen) == dict(Counter(row["tier"] for row in rows))


def test_an_empty_crawldb_selects_nothing():
    conf = load_config(overrides=["generate.topN=5", "generate.max.count=1"]).as_dict()
    assert driver_selection(as_table([]), conf, NOW, lambda hosts: {}).num_rows == 0


def test_a_timestamp_column_counts_in_milliseconds():
    """Spark's tasks give times as timestamps of microseconds, the driver as epoch ms."""
    micros = pa.array([(NOW + 1) * 1000 - 1, (NOW + 1) * 1000], pa.timestamp("us", tz="UTC"))
    assert selection.millis(micros).tolist() == [NOW, NOW + 1]
    assert selection.millis(pa.array([NOW, None], pa.int64()))[0] == NOW


def test_the_group_key_keeps_variants_together_and_domains_under_a_domain_cap():
    conf = load_config().as_dict()
    capped = {**conf, "generate.max.count": 5, "generate.count.mode": "domain"}
    for host in HOSTS:
        bare = host.removeprefix("www.")
        assert selection.group_key(host, conf) == selection.group_key(bare, conf) == bare
        assert selection.group_key(host, capped) == registered_domain(host)
    # A cap by host, or none, keeps the hosts of one domain apart: a large site is spread.
    for mode in ({}, {"generate.max.count": 5}, {"fetcher.timelimit.mins": 1.0}):
        assert not selection.counts_by_domain({**conf, **mode})
    assert selection.counts_by_domain({**capped, "generate.max.count": -1}) is False
    timed = {**capped, "generate.max.count": -1, "fetcher.timelimit.mins": 1.0}
    assert selection.counts_by_domain(timed)


def test_tier_counts_cut_at_the_budget_give_the_same_quotas():
    """What ``within_budget_reach`` relies on: a tier's count beyond the budget changes
    no quota, so a part may drop the rows past the budget in its tier."""
    rng = random.Random(5)
    for _ in range(2000):
        budget = rng.randrange(0, 60)
        counts = [rng.randrange(0, 120) for _ in range(3)]
        shares = [rng.random() for _ in range(3)]
        shares = [share / sum(shares) for share in shares]
        cut = [min(count, budget) for count in counts]
        assert tier_quotas(budget, counts, shares) == tier_quotas(budget, cut, shares)


def test_the_rows_past_the_budget_in_their_tier_are_cut_and_no_other():
    within_budget_reach = selection.within_budget_reach
    table = pa.table(
        {
            "tier": ["high", "high", "high", "low", "low", "medium"],
            "priority": [0.9, 0.8, 0.95, 0.1, 0.2, 0.5],
            "depth": [1, 1, 2, 1, 1, 1],
            "url": ["a", "b", "c", "d", "e", "f"],
        }
    )
    assert within_budget_reach(table, 2).column("url").to_pylist() == ["a", "c", "d", "e", "f"]
    assert within_budget_reach(table, -1).num_rows == 6
    assert within_budget_reach(table, 0).num_rows == 0
