"""generate on Spark: due URLs, best first, capped per host and in all, one host per partition."""

import time

import pytest
from deltalake import DeltaTable
from pyspark.sql import functions as F

from crawldb.merge import new_row
from crawldb.priority import NEVER_FETCHED, TIERS, priority, tier, tier_quotas
from crawldb.schema import CRAWLDB, ROBOTS
from engine.caches.robots_cache import host_pauses
from engine.executors.generate_plan import spark_pauses, spark_selection
from engine.runtime.layout import DataDir
from engine.tables import buckets
from engine.tables.frames import rows_to_df, with_timestamps
from engine.tables.store import ensure_crawldb, merge_rows, read_crawldb
from jobs.generate import generate
from lib.config import load_config

pytestmark = pytest.mark.spark
NOW = 1_700_000_000_000  # in the past: generate() below uses the real clock


def crawldb_rows():
    rows = []
    for host in range(6):
        for page in range(5):
            row = new_row(
                f"http://h{host}.test/{page}",
                f"h{host}.test",
                NOW - 1000,
                score=host + page / 10,
                depth=page,
                fetch_interval=60,
            )
            rows.append(row)
    rows[0]["fetch_time"] = NOW + 1  # not due yet
    rows[1]["score"] = -1.0  # below generate.min.score
    return rows


def select_due(crawldb, conf, now):
    """The rows generate's selection takes by Spark's tasks (steps 1 to 3)."""
    return spark_selection(crawldb.sparkSession, crawldb, conf.as_dict(), now)


@pytest.fixture(scope="module")
def crawldb(spark):
    return rows_to_df(spark, spark.sparkContext.parallelize(crawldb_rows()), CRAWLDB)


def test_due_and_min_score(crawldb):
    urls = {r["url"] for r in select_due(crawldb, load_config(), NOW)}
    assert len(urls) == 28
    assert "http://h0.test/0" not in urls and "http://h0.test/1" not in urls


def test_a_rule_added_since_inject_keeps_urls_out_of_the_fetch_list(crawldb):
    """generate.filter (Nutch's): the URL filters apply again to the crawldb's due URLs."""
    denied = load_config(overrides=["urlfilter.hosts.deny=h2.test", "generate.filter=true"])
    urls = {r["url"] for r in select_due(crawldb, denied, NOW)}
    assert len(urls) == 28 - 5
    assert not any("h2.test" in url for url in urls)
    trusted = load_config(overrides=["urlfilter.hosts.deny=h2.test", "generate.filter=false"])
    assert len(select_due(crawldb, trusted, NOW)) == 28


def expected_priorities(rows) -> dict[str, float]:
    """The formula of crawldb.priority applied in Python to due, never-fetched rows."""
    conf = load_config()
    due = [r for r in rows if r["fetch_time"] <= NOW and r["score"] >= 0]
    top = max(r["score"] for r in due)
    return {
        r["url"]: priority(r["score"] / top, NEVER_FETCHED, 0, 0, r["depth"], 0, conf) for r in due
    }


def test_spark_priority_is_the_formula(crawldb):
    chosen = select_due(crawldb, load_config(), NOW)
    expected = expected_priorities(crawldb_rows())
    assert {r["url"]: r["priority"] for r in chosen} == pytest.approx(expected)
    assert all(r["tier"] == tier(r["priority"], load_config()) for r in chosen)


def test_caps_per_host_and_in_all_keep_the_best_of_each_tier(crawldb):
    conf = load_config(overrides=["generate.max.count=2", "generate.topN=7"])
    chosen = select_due(crawldb, conf, NOW)
    assert len(chosen) == 7
    per_host = {}
    for row in chosen:
        per_host.setdefault(row["host"], []).append(row["url"])
    assert all(len(urls) <= 2 for urls in per_host.values())
    # Expected from the formula: the host cap first, then each tier's quota, best first.
    values = expected_priorities(crawldb_rows())
    capped = []
    for host in {url.split("/")[2] for url in values}:
        mine = sorted((u for u in values if u.split("/")[2] == host), key=lambda u: -values[u])
        capped += mine[:2]
    by_tier = {
        name: sorted((u for u in capped if tier(values[u], conf) == name), key=lambda u: -values[u])
        for name in TIERS
    }
    quotas = tier_quotas(7, [len(by_tier[t]) for t in TIERS], conf["generate.tier.shares"])
    expected = {u for name, q in zip(TIERS, quotas, strict=True) for u in by_tier[name][:q]}
    assert {r["url"] for r in chosen} == expected


def test_fetch_list_puts_each_host_in_one_partition(spark, tmp_path):
    data = DataDir.at(tmp_path / "data")
    ensure_crawldb(spark, data)
    rows = spark.sparkContext.parallelize(crawldb_rows())
    merge_rows(spark, data, rows_to_df(spark, rows, CRAWLDB), "test")
    conf = load_config(overrides=["fetcher.partitions=3"])
    name = generate(spark, conf, data)
    fetchlist = spark.read.format("delta").load(data.segment(name).table("fetchlist"))
    files_per_host = (
        fetchlist.withColumn("file", F.input_file_name())
        .groupBy("host")
        .agg(F.countDistinct("file").alias("files"))
        .collect()
    )
    assert len(files_per_host) == 6
    assert all(r["files"] == 1 for r in files_per_host)
    assert data.segment(name).summary("generated")["urls"] == fetchlist.count()
    assert generate(spark, load_config(overrides=["generate.min.score=100"]), data) is None


def budget_crawldb_rows() -> list[dict]:
    """A frontier of 90 URLs on 9 hosts: 30 new pages of high score, 30 new pages of low
    score, 30 stable pages (fetched 3 times, never changed) of low score, just due."""
    rows = []
    day_ms = 86_400_000
    now = int(time.time() * 1000)  # generate() reads the real clock
    for i in range(90):
        kind = ("top", "new", "stable")[i // 30]
        row = new_row(
            f"http://b{i % 9}.test/{kind}/{i}",
            f"b{i % 9}.test",
            now - 1000,
            score=10.0 + i if kind == "top" else 0.5 + i / 100,
            depth=1,
            fetch_interval=86_400,
        )
        if kind == "stable":
            row.update(
                status="fetched",
                content_hash="h",
                fetch_count=3,
                revisit_count=2,
                last_fetch_time=now - day_ms,
                fetch_time=now - 1000,
            )
        rows.append(row)
    return rows


def test_a_budget_takes_the_best_first_and_every_tier_gets_its_share(spark, tmp_path):
    data = DataDir.at(tmp_path / "data")
    ensure_crawldb(spark, data)
    rows = spark.sparkContext.parallelize(budget_crawldb_rows())
    merge_rows(spark, data, rows_to_df(spark, rows, CRAWLDB), "test")
    conf = load_config(overrides=["generate.topN=20", "generate.update.crawldb=true"])
    first = generate(spark, conf, data)
    listed = spark.read.format("delta").load(data.segment(first).table("fetchlist")).collect()
    tiers = {name: [r for r in listed if r["tier"] == name] for name in TIERS}
    assert {name: len(rows) for name, rows in tiers.items()} == {"high": 12, "medium": 5, "low": 3}
    # high tier: the 12 best scores of the 30 "top" pages; low tier: stable pages only
    assert sorted(int(r["url"].rsplit("/", 1)[1]) for r in tiers["high"]) == list(range(18, 30))
    assert all("/stable/" in r["url"] for r in tiers["low"])
    assert min(r["priority"] for r in tiers["high"]) > max(r["priority"] for r in tiers["medium"])
    summary = data.segment(first).summary("generated")
    assert summary["tiers"] == {"high": 12, "medium": 5, "low": 3}
    # The stamp is the crawldb's upsert: its listed URLs have a generate_time, and its
    # files are still buckets (a Delta MERGE would have ended them).
    stamped = {r["url"] for r in read_crawldb(spark, data).collect() if r["generate_time"]}
    assert stamped == {r["url"] for r in listed}
    names = [uri.rsplit("/", 1)[-1] for uri in DeltaTable(data.crawldb).file_uris()]
    assert buckets.layout(names) is not None
    # A second generate before updatedb (overlapping rounds) takes none of the same URLs.
    second = generate(spark, conf, data)
    again = spark.read.format("delta").load(data.segment(second).table("fetchlist")).collect()
    assert len(again) == 20 and not {r["url"] for r in again} & {r["url"] for r in listed}
    assert sorted(int(r["url"].rsplit("/", 1)[1]) for r in again if r["tier"] == "high") == list(
        range(6, 18)
    )


@pytest.mark.web
def test_with_a_budget_a_crawl_fetches_high_scores_first(spark, web, tmp_path):
    from crawlruns import web_crawl_args
    from weblog import entries_for

    from jobs import crawl

    agent = "https://trawl.invalid/test-budget"
    base = web.site.base(3)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{base}/page/{k}\tscore={k}\n" for k in range(1, 9)))
    settings = web_crawl_args(tmp_path / "data", agent, "db.max.depth=0", "generate.topN=3")
    args = ["--seeds", str(seeds), "--rounds", "3", *settings]
    assert crawl.main(args) == 0
    pages = [e for e in entries_for(web, agent) if e["path"].startswith("/page/")]
    order = [int(e["path"].rsplit("/", 1)[1]) for e in sorted(pages, key=lambda e: e["start"])]
    assert [set(order[0:3]), set(order[3:6]), set(order[6:])] == [{8, 7, 6}, {5, 4, 3}, {2, 1}]


def test_hosts_are_spread_over_partitions_by_expected_fetch_time(spark, tmp_path):
    data = DataDir.at(tmp_path / "data")
    ensure_crawldb(spark, data)
    now = int(time.time() * 1000)
    rows = [
        new_row(
            f"http://big.test/{i}", "big.test", now - 1000, score=1.0, depth=1, fetch_interval=60
        )
        for i in range(40)
    ]
    rows += [
        new_row(
            f"http://s{h}.test/{i}", f"s{h}.test", now - 1000, score=1.0, depth=1, fetch_interval=60
        )
        for h in range(12)
        for i in range(3)
    ]
    merge_rows(spark, data, rows_to_df(spark, spark.sparkContext.parallelize(rows), CRAWLDB), "t")
    name = generate(spark, load_config(overrides=["fetcher.partitions=4"]), data)
    listed = spark.read.format("delta").load(data.segment(name).table("fetchlist")).collect()
    partitions = {}
    for row in listed:
        partitions.setdefault(row["host"], set()).add(row["partition"])
    assert all(len(parts) == 1 for parts in partitions.values())  # a host in one partition
    big = partitions.pop("big.test")
    assert not any(parts == big for parts in partitions.values())  # the big host alone
    loads = sorted(sum(1 for r in listed if r["partition"] == p) for p in range(4))
    assert loads == [12, 12, 12, 40]  # small hosts evenly over the other three
    summary = data.segment(name).summary("generated")
    assert summary["skew_expected"] == pytest.approx(40 / 12, abs=1e-3)


def test_per_domain_cap_counts_all_hosts_of_a_registered_domain(spark):
    rows = [
        new_row(f"http://{host}/{i}", host, NOW - 1000, score=1.0 + i, depth=1, fetch_interval=60)
        for host in ("a.example.com", "b.example.com", "www.other.org")
        for i in range(3)
    ]
    frame = rows_to_df(spark, spark.sparkContext.parallelize(rows), CRAWLDB)
    conf = load_config(overrides=["generate.max.count=2", "generate.count.mode=domain"])
    hosts = [r["host"] for r in select_due(frame, conf, NOW)]
    assert sum(1 for h in hosts if h.endswith("example.com")) == 2  # two hosts, one domain
    assert hosts.count("www.other.org") == 2
    by_host = load_config(overrides=["generate.max.count=2"])
    assert len(select_due(frame, by_host, NOW)) == 6


def test_host_pauses_take_the_fresh_cached_crawl_delay(spark, tmp_path):
    """A host's pause is the larger of fetcher.server.delay and the Crawl-delay of its
    fresh cached robots.txt (for Trawl's agent); a 404, a stale entry or no entry gives
    the server delay."""
    data = DataDir.at(tmp_path / "data")
    conf = load_config(overrides=["fetcher.server.delay=0.5", "http.agent.name=trawl"])
    fresh = int(time.time() * 1000)
    stale = fresh - 10 * 86_400_000
    robots = b"User-agent: trawl\nCrawl-delay: 4\n\nUser-agent: *\nCrawl-delay: 9\n"
    cached = [
        ("slow.test", "http://slow.test/robots.txt", fresh, 200, robots),
        ("tiny.test", "http://tiny.test/robots.txt", fresh, 200, b"Crawl-delay: 0.1\n"),
        ("gone.test", "http://gone.test/robots.txt", fresh, 404, b"Crawl-delay: 7\n"),
        ("old.test", "http://old.test/robots.txt", stale, 200, robots),
    ]
    table = with_timestamps(spark.createDataFrame(cached, ROBOTS.python_ddl), ROBOTS)
    table.write.format("delta").save(data.robots)
    hosts = {"slow.test", "tiny.test", "gone.test", "old.test", "new.test"}
    settings = conf.as_dict()
    assert spark_pauses(spark, settings, data) == {"slow.test": 4.0}  # the others: the delay
    assert host_pauses(settings, data, hosts) == {
        "slow.test": 4.0,
        "tiny.test": 0.5,
        "gone.test": 0.5,
        "old.test": 0.5,
        "new.test": 0.5,
    }


def test_a_slow_host_is_spread_over_rounds_and_deferred_urls_go_first(spark, tmp_path):
    """40 hosts of 30 URLs at the 1 s delay and one of 60 whose robots.txt asks for
    Crawl-delay 3 (under 5% of the round): the round's 95% point is about 29 s, its budget
    1.5 x 29 + 6 = 49.5 s, so the slow host gets 17 URLs (0, 3 ... 48 s), the rest spread
    to later rounds; its 5 URLs deferred by the last fetch are among them though they
    score lowest."""
    data = DataDir.at(tmp_path / "data")
    ensure_crawldb(spark, data)
    past = int(time.time() * 1000) - 60_000
    rows = [
        new_row(f"http://f{h}.test/{i}", f"f{h}.test", past, score=1.0, depth=1, fetch_interval=60)
        for h in range(40)
        for i in range(30)
    ]
    slow = [
        new_row(
            f"http://slow.test/{i}", "slow.test", past, score=1.0 + i, depth=1, fetch_interval=60
        )
        for i in range(60)
    ]
    for row in slow[:5]:
        row["reason"] = "deferred"
    merge_rows(
        spark, data, rows_to_df(spark, spark.sparkContext.parallelize(rows + slow), CRAWLDB), "t"
    )
    robots = [
        ("slow.test", "http://slow.test/robots.txt", past, 200, b"User-agent: *\nCrawl-delay: 3\n")
    ]
    table = with_timestamps(spark.createDataFrame(robots, ROBOTS.python_ddl), ROBOTS)
    table.write.format("delta").save(data.robots)
    name = generate(spark, load_config(), data)
    listed = spark.read.format("delta").load(data.segment(name).table("fetchlist"))
    slow_listed = {r["url"] for r in listed.where("host = 'slow.test'").collect()}
    assert len(slow_listed) == 17
    assert {row["url"] for row in slow[:5]} <= slow_listed
    assert listed.where("host != 'slow.test'").count() == 1200
    assert data.segment(name).summary("generated")["spread"] == 60 - 17
    off = load_config(overrides=["fetcher.round.tail.defer=false"])
    assert len(select_due(read_all(spark, data), off, int(time.time() * 1000))) == 1260


def read_all(spark, data):
    return spark.read.format("delta").load(data.crawldb).drop("generate_time")
