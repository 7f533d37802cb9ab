"""The crawl-job API's submissions, on the Spark side: generate first injects the URLs
submitted since the last round, and leaves out the unfetched URLs of cancelled jobs.

The API (``api/``, delta-rs) appends to ``DIR/api/submissions`` and ``DIR/api/cancelled``;
this module alone writes ``DIR/api/injected`` (job, URL, time), so pending submissions
are those not yet there. Injection goes through inject's own merge (a submitted URL
already known keeps its row) with a score set by the job's priority
(``api.priority.score.*``) and the job id in the row's metadata (``api_job``). A run
killed between the merge and the record injects the same URLs again next time, which
changes nothing.
"""

from __future__ import annotations

from engine.executors.seeds import merge_seeds
from engine.runtime.layout import DataDir
from engine.runtime.progress import progress
from engine.tables.delta_commits import delta_commit_message
from engine.tables.delta_files import is_delta_table
from lib import vocabulary as st
from lib.url.seeds import Seed


def _table(spark, data: DataDir, name: str):

    path = data.api_table(name)
    if not is_delta_table(path):
        return None
    return spark.read.format("delta").load(path)


def inject_pending(spark, conf, data: DataDir) -> int:
    """Inject the submissions not injected yet (of jobs not cancelled); returns how many."""
    from pyspark.sql import functions as F

    submitted = _table(spark, data, "submissions")
    if submitted is None:
        return 0
    pending = submitted.select("job_id", "url", "priority")
    for name, keys in (("cancelled", ["job_id"]), ("injected", ["job_id", "url"])):
        done = _table(spark, data, name)
        if done is not None:
            pending = pending.join(done.select(*keys).distinct(), keys, "left_anti")
    pending = pending.cache()
    if pending.isEmpty():
        pending.unpersist()
        return 0
    scores = {p: conf[f"api.priority.score.{p}"] for p in ("high", "medium", "low")}
    seeds = pending.rdd.map(
        lambda r: Seed(r["url"], 0, score=scores[r["priority"]], metadata={"api_job": r["job_id"]})
    )
    merge_seeds(spark, conf, data, seeds, "trawl inject api submissions")
    count = pending.count()
    with delta_commit_message(spark, "trawl api injected"):
        pending.select("job_id", "url", F.current_timestamp().alias("injected")).write.format(
            "delta"
        ).mode("append").save(data.api_table("injected"))
    pending.unpersist()
    progress("inject", [("submitted urls", count)])
    return count


def without_cancelled(spark, data: DataDir, crawldb):
    """The crawldb without the unfetched URLs that only cancelled jobs asked for."""
    from pyspark.sql import functions as F

    submitted, cancelled = _table(spark, data, "submissions"), _table(spark, data, "cancelled")
    if submitted is None or cancelled is None:
        return crawldb
    stopped = cancelled.select("job_id").distinct()
    of_cancelled = submitted.join(stopped, "job_id", "left_semi").select("url")
    of_others = submitted.join(stopped, "job_id", "left_anti").select("url")
    dropped = of_cancelled.join(of_others, "url", "left_anti").distinct()
    unfetched = F.col("status") == st.UNFETCHED
    kept = crawldb.where(~unfetched).unionByName(
        crawldb.where(unfetched).join(dropped, "url", "left_anti")
    )
    return kept
