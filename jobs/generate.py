"""generate: select due URLs into a new segment's fetch list (data flow step 2).

Usage: ``submit.sh generate --data DIR [--adddays N]``. A URL is due when its
``fetch_time`` is at or before now (plus ``--adddays``) and its score is at least
``generate.min.score``. Highest priority first (``crawldb.priority``: importance,
staleness, change rate, depth, failures): at most ``generate.max.count`` per host (or
domain), and ``generate.topN`` in all, shared among the high, medium and low tiers.
With ``generate.update.crawldb`` the URLs are stamped in the crawldb and not generated
again until updatedb applies the segment (or ``crawl.gen.delay`` passes). The fetch list
is partitioned by host, so that all URLs of one host are in one partition and no two
fetch tasks ever talk to the same host.
With ``generate.filter`` (as Nutch's; off by default, as Nutch's bin/crawl runs it), the
URL filters (built-in and ``urlfilter.plugins``) are applied again to the due URLs: rules
changed since a URL entered the crawldb keep it out of the fetch list (its row stays).
Exit code 1 when nothing is due (as Nutch's Generator), with no segment written.
"""

from __future__ import annotations

import json
import sys
from functools import partial, reduce

from crawldb.partitioning import (
    assign_partitions,
    host_cost,
    host_pace,
    partition_loads,
    round_shares,
    skew,
    urls_within,
)
from crawldb.priority import NEVER_FETCHED, TIERS, check_weights, priority, tier_quotas
from crawldb.schedule import shifted_now
from crawldb.schema import FETCHLIST
from engine import driver_generate, task_files
from engine.cli import job_main, job_parser
from engine.delta_commits import delta_commit_message
from engine.delta_files import read_current
from engine.layout import DataDir, crawldb_required
from engine.metrics import latest_responses, record
from engine.progress import progress
from engine.robots_cache import host_pauses
from engine.store import read_crawldb, upgrade_crawldb
from engine.submissions import inject_pending, without_cancelled
from lib import vocabulary as st
from lib.clock import Stopwatch, now_ms
from lib.url.domains import registered_domain
from lib.url.filter import UrlFilter


def build_parser():
    """Command line of the job."""
    parser = job_parser("generate", __doc__.splitlines()[0])
    parser.add_argument(
        "--adddays", type=float, default=0.0, help="pretend the clock is N days ahead"
    )
    return parser


def run(spark, conf, args) -> int:
    """Generate one segment; 0 when written, 1 when nothing was due."""
    return 0 if generate(spark, conf, DataDir.at(args.data, conf), args.adddays) else 1


def fetch_partitions(spark, conf) -> int:
    """How many fetch partitions a fetch list has (``fetcher.partitions``)."""
    configured = conf["fetcher.partitions"]
    return configured if configured > 0 else spark.sparkContext.defaultParallelism


def with_priority(due, conf, now: int):
    """The due rows with their ``priority`` and ``tier`` (crawldb.priority)."""
    from pyspark.sql import functions as F

    highest = due.agg(F.max("pagerank").alias("pr"), F.max("score").alias("score")).collect()[0]
    importance = F.coalesce(
        F.col("pagerank") / F.lit(highest["pr"]) if highest["pr"] else F.lit(None),
        F.col("score") / F.lit(highest["score"]) if highest["score"] else F.lit(None),
        F.lit(0.0),
    )
    since_fetch = (F.lit(now) - F.unix_millis("last_fetch_time")) / 1000.0
    # greatest() skips NULLs, so a URL never fetched is told apart first
    elapsed = F.when(F.col("last_fetch_time").isNull(), F.lit(NEVER_FETCHED)).otherwise(
        F.greatest(since_fetch, F.lit(0.0)) / F.col("fetch_interval")
    )
    value = priority(
        importance,
        elapsed,
        F.coalesce("change_count", F.lit(0)),
        F.coalesce("revisit_count", F.lit(0)),
        F.coalesce("depth", F.lit(0)),
        F.coalesce("retries", F.lit(0)),
        conf,
        exp=F.exp,
    )
    tier = (
        F.when(deferred(), "high")
        .when(F.col("priority") >= conf["generate.tier.high.min"], "high")
        .when(F.col("priority") >= conf["generate.tier.medium.min"], "medium")
        .otherwise("low")
    )
    return due.withColumn("priority", value).withColumn("tier", tier)


def deferred():
    """Rows deferred by the last round's fetch (lib.fetching.roundtail): generated first."""
    from pyspark.sql import functions as F

    return F.coalesce(F.col("reason") == F.lit(st.REASON_DEFERRED), F.lit(False))


def count_key(conf):
    """The column ``generate.max.count`` counts by: host, or registered domain."""
    from pyspark.sql import functions as F

    mode = conf["generate.count.mode"]
    if mode == "host":
        return F.col("host")
    if mode == "domain":
        # useArrow given: else PySpark looks for a pandas UDF type in the hints, and warns
        return F.udf(registered_domain, "string", useArrow=False)(F.col("host"))
    raise ValueError(f"generate.count.mode must be host or domain, not {mode!r}")


def host_cap(conf):
    """The most URLs of one host (or domain) per fetch list, as a Column or None:
    ``generate.max.count``, and what the host's pause lets it fetch within
    ``fetcher.timelimit.mins`` (more would only be skipped at the time limit)."""
    from pyspark.sql import functions as F

    caps = []
    if conf["generate.max.count"] >= 0:
        caps.append(F.lit(conf["generate.max.count"]))
    minutes = conf["fetcher.timelimit.mins"]
    if minutes >= 0:
        column_max = lambda low, value: F.greatest(F.lit(low), value)  # noqa: E731
        by_time = urls_within(F.col("pause"), minutes, floor=F.floor, greatest=column_max)
        caps.append(F.when(F.col("pause") > 0, by_time))
    if not caps:
        return None
    return F.least(*caps) if len(caps) > 1 else caps[0]


def select_due(crawldb, conf, now: int, pauses=None, held: list | None = None):
    """The fetch list rows: due, above the minimum score, not generated already, capped
    per host (or domain), then the best of each priority tier within the budget.
    ``pauses`` (host, pause) are the hosts' delays (engine.robots_cache.host_pauses); the
    rows keep a ``pause`` column for the partitioning. A frame cached on the way is
    added to ``held``, for the caller to release (none is cached without it)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    due = crawldb.where(
        (F.unix_millis("fetch_time") <= F.lit(now))
        & (F.col("score") >= F.lit(conf["generate.min.score"]))
    )
    if conf["generate.update.crawldb"]:
        free_after = F.unix_millis("generate_time") + F.lit(conf["crawl.gen.delay"])
        due = due.where(F.col("generate_time").isNull() | (free_after <= F.lit(now)))
    if conf["generate.filter"]:
        due = in_scope(due, conf)
    due = with_priority(due, conf, now)
    best_first = [
        deferred().desc(),
        F.col("priority").desc(),
        F.col("depth").asc(),
        F.col("url").asc(),
    ]
    # One URL per dedup key (lib.url.normalize.UrlNormalizer): variants of a page are not all
    # fetched; the one that answered with content is preferred over a redirect.
    redirect_last = F.col("status").isin(st.REDIR_PERM, st.REDIR_TEMP).cast("int")
    variant = Window.partitionBy(F.coalesce("dedup_key", "url")).orderBy(redirect_last, *best_first)
    due = due.withColumn("_variant", F.row_number().over(variant))
    due = due.where(F.col("_variant") == 1).drop("_variant")
    due = (
        due.join(pauses, "host", "left")
        if pauses is not None
        else due.withColumn("pause", F.lit(float(conf["fetcher.server.delay"])))
    )
    cap = host_cap(conf)
    if cap is not None:
        rank = F.row_number().over(Window.partitionBy(count_key(conf)).orderBy(*best_first))
        due = due.withColumn("_rank", rank).where(F.col("_rank") <= cap).drop("_rank")
    due = due.withColumn("deferred", deferred())
    due = due.select(
        *[name for name in FETCHLIST.names if name != "partition"], "pause", "deferred"
    )
    budget = conf["generate.topN"]
    # Deferred rows are all in the high tier: within it, by priority (no reason column left).
    return due if budget < 0 else within_budget(due, budget, conf, best_first[1:], held)


def in_scope(rows, conf):
    """The rows whose URL the URL filters still keep (``generate.filter``). Only the
    URLs cross to Python (the other columns stay in the JVM); the few rejected come back."""
    # as_dict: the settings as shipped to a task (with the regex rules' text)
    task = partial(_rejected_batches, conf.as_dict())
    rejected = rows.select("url").mapInArrow(task, "url STRING")
    return rows.join(rejected, "url", "left_anti")


def _rejected_batches(conf: dict, batches):
    """Task side: the URLs of each batch that a filter rejects."""
    url_filter = UrlFilter(conf)  # once per task: plugins are made here
    for batch in batches:
        urls = batch.column("url").to_pylist()
        keep = [url_filter.reject(url) is not None for url in urls]
        yield batch.filter(keep)


def within_budget(due, budget: int, conf, best_first, held: list | None = None):
    """The best URLs of each tier, as many as its quota of the budget. ``due`` is read
    twice (its tiers counted, then its best taken): cached when ``held`` takes it."""
    if held is not None:
        due = due.cache()
        held.append(due)
    counts = {r["tier"]: r["count"] for r in due.groupBy("tier").count().collect()}
    quotas = tier_quotas(budget, [counts.get(t, 0) for t in TIERS], conf["generate.tier.shares"])
    chosen = [
        due.where(due["tier"] == name).orderBy(*best_first).limit(quota)
        for name, quota in zip(TIERS, quotas, strict=True)
        if quota
    ]
    return reduce(lambda a, b: a.unionByName(b), chosen) if chosen else due.limit(0)


def generate(spark, conf, data: DataDir, add_days: float = 0.0) -> str | None:
    """Write a new segment's fetch list; returns its name, or None when nothing is due. A
    small crawldb's fetch list is selected in the driver (``engine.driver_generate``)."""
    clock = Stopwatch()
    check_weights(conf)
    now = shifted_now(now_ms(), add_days)
    settings = conf.as_dict()
    if driver_generate.in_driver(settings, data):
        plan, held = driver_generate.fetch_plan(spark, settings, data, now), []
    else:
        plan, held = spark_plan(spark, conf, data, now)
    count = sum(urls for urls, _ in plan.per_host.values())
    if count == 0:
        for frame in held:
            frame.unpersist()
        progress("generate", [("urls due", 0)])
        return None
    name = data.new_segment_name()
    segment = data.segment(name)
    partitions = fetch_partitions(spark, conf)
    placed, skew_expected = place_hosts(plan.per_host, partitions)
    message = f"trawl generate segment={name}"
    if held:
        tiers = write_planned(spark, conf, data, segment, (plan, placed, partitions, held), now)
    else:
        tiers = driver_generate.write_fetchlist(spark, segment, plan.rows, placed, message)
    tiers = {t: tiers.get(t, 0) for t in TIERS}
    count = sum(tiers.values())  # as written
    summary = {"urls": count, "hosts": len(placed), "partitions": partitions, "tiers": tiers}
    # URLs of slow hosts left for later rounds, so that the round's hosts finish together.
    summary["spread"] = plan.due_count - count
    summary = {**summary, "skew_expected": skew_expected, "seconds": round(clock.seconds, 1)}
    segment.mark("generated", summary)
    record(spark, data.root, "generate", name, summary)
    progress(
        "generate",
        [
            ("urls", count),
            ("hosts", len(placed)),
            *tiers.items(),
            ("spread to later rounds", summary["spread"]),
            ("skew", skew_expected),
            ("segment", name),
        ],
    )
    return name


def spark_plan(spark, conf, data: DataDir, now: int):
    """The fetch plan by Spark's jobs (``plan.rows``: a DataFrame), and the frames it
    cached, to release once the fetch list is written."""
    from pyspark.sql import functions as F

    inject_pending(spark, conf, data)  # what the crawl-job API received since last round
    crawldb = without_cancelled(spark, data, read_crawldb(spark, data))
    due_hosts = crawldb.where(F.unix_millis("fetch_time") <= F.lit(now)).select("host")
    pauses = host_pauses(spark, data, conf, due_hosts).cache()
    held = [pauses]
    due = select_due(crawldb, conf, now, pauses, held).cache()
    per_host = host_paces(spark, data, due, conf)
    due_count = sum(urls for urls, _ in per_host.values())
    shares = round_shares(per_host, conf) if conf["fetcher.round.tail.defer"] else {}
    selected = within_shares(spark, due, shares, per_host)
    return driver_generate.FetchPlan(selected, per_host, due_count), [due, *held]


def write_planned(spark, conf, data: DataDir, segment, planned, now: int) -> dict:
    """Write the fetch list of Spark's plan (``planned``: the plan, its hosts' partitions,
    its partition count, its cached frames), release the frames, stamp the crawldb at ``now``
    (``generate.update.crawldb``); returns its URLs by tier."""
    plan, placed, partitions, held = planned
    placed_frame = spark.createDataFrame(list(placed.items()), "host STRING, partition INT")
    fetchlist = plan.rows.join(placed_frame, "host").select(*FETCHLIST.names)
    message = f"trawl generate segment={segment.name}"
    tiers = write_fetchlist(spark, segment, fetchlist.repartition(partitions, "host"), message)
    # Dropped before mark_generated's commit, which would re-plan them (they read the crawldb).
    for frame in held:
        frame.unpersist()
    if conf["generate.update.crawldb"]:
        mark_generated(spark, data, segment, now)
    return tiers


def write_fetchlist(spark, segment, fetchlist, message: str) -> dict[str, int]:
    """Write the segment's fetch list table, a file per partition of ``fetchlist``
    written by its task (``engine.task_files``), in one commit labelled ``message``;
    returns its URLs by tier, counted by the tasks."""
    from collections import Counter

    table = segment.table("fetchlist")
    stored = task_files.stored_schema(FETCHLIST)
    run = task_files.new_run(segment.storage, table)
    compression = spark.conf.get("spark.sql.parquet.compression.codec")
    task = partial(_fetchlist_task, segment.storage, table, run, stored, compression)
    files = [row.asDict() for row in fetchlist.mapInArrow(task, task_files.FILE_DDL).collect()]
    task_files.commit(segment.storage, table, run, files, stored, message)
    tiers = Counter()
    for file in files:
        tiers.update(json.loads(file["figures"]))
    return dict(tiers)


def _fetchlist_task(storage, table: str, run: str, stored, compression: str, batches):
    """Task side: this partition's fetch list rows to one file, with its tier counts."""
    from collections import Counter

    tiers = Counter()
    yield from task_files.write_spark_batches(
        storage,
        table,
        run,
        stored,
        compression,
        batches,
        lambda: dict(tiers),
        lambda batch: tiers.update(batch.column("tier").to_pylist()),
    )


def host_paces(spark, data: DataDir, selected, conf) -> dict[str, tuple[int, float]]:
    """Host -> (URLs selected, seconds per URL): its pause (server delay, cached
    Crawl-delay) and its usual answer in the latest fetch (crawldb.partitioning.host_pace)."""
    from pyspark.sql import functions as F

    responses = latest_responses(spark, data.root)
    per_host = selected.groupBy("host").agg(
        F.count("*").alias("urls"), F.max("pause").alias("pause")
    )
    return {
        r["host"]: (r["urls"], host_pace(r["pause"] or 0.0, responses.get(r["host"]), conf))
        for r in per_host.collect()
    }


def within_shares(spark, selected, shares: dict[str, int], per_host: dict):
    """The selected rows, at most ``shares[host]`` of a host named there (its best: the
    deferred first, then by tier and priority); ``per_host`` counts are updated."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not shares:
        return selected
    for host, share in shares.items():
        per_host[host] = (share, per_host[host][1])
    capped = spark.createDataFrame(list(shares.items()), "host STRING, share INT")
    best = [F.col("deferred").desc(), (F.col("tier") == "high").desc(), F.col("priority").desc()]
    rank = F.row_number().over(Window.partitionBy("host").orderBy(*best, F.col("url")))
    ranked = selected.join(F.broadcast(capped), "host", "left").withColumn("_rank", rank)
    kept = F.col("share").isNull() | (F.col("_rank") <= F.col("share"))
    return ranked.where(kept).drop("_rank", "share")


def place_hosts(per_host: dict[str, tuple[int, float]], partitions: int):
    """Host -> fetch partition by expected fetch time (crawldb.partitioning), and the
    expected skew (slowest partition over the median)."""
    costs = {host: host_cost(urls, pace) for host, (urls, pace) in per_host.items()}
    placed = assign_partitions(costs, partitions)
    return placed, skew(partition_loads(costs, placed, partitions))


def mark_generated(spark, data: DataDir, segment, now: int) -> None:
    """Stamp the fetch list's URLs with ``generate_time`` (generate.update.crawldb)."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    upgrade_crawldb(spark, data)
    listed = read_current(spark, segment.table("fetchlist")).select("url")
    stamp = F.timestamp_millis(F.lit(now))
    with delta_commit_message(spark, f"trawl generate mark segment={segment.name}"):
        (
            DeltaTable.forPath(spark, data.crawldb)
            .alias("t")
            .merge(listed.alias("s"), "t.url = s.url")
            .whenMatchedUpdate(set={"generate_time": stamp})
            .execute()
        )


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("generate", build_parser(), run, argv, crawldb_required)


if __name__ == "__main__":
    sys.exit(main())
