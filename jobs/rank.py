"""rank: PageRank of every crawldb URL over the link graph, written to ``pagerank``.

Usage: ``submit.sh rank --data DIR``. The graph: each URL's outlinks from its latest
parsed segment, plus redirect edges (URL -> its target), kept where both ends are in the
crawldb (self-links dropped). Power iteration with DataFrames (``crawldb.rank``), damping
``rank.damping``, until the L1 change is below ``rank.tolerance`` or after
``rank.max.iterations``. Ranks sum to 1 over the crawldb; generate uses them, over the
highest, as the importance term of its priority. Run it on its own schedule (as Nutch's
LinkRank), e.g. every few rounds.
"""

from __future__ import annotations

import sys
from functools import reduce

from crawldb.rank import next_rank
from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import DataDir, crawldb_required
from engine.runtime.progress import progress
from engine.tables.delta_commits import delta_commit_message
from engine.tables.metrics import record
from engine.tables.store import read_crawldb, upgrade_crawldb
from lib import vocabulary as st
from lib.clock import Stopwatch


def build_parser():
    """Command line of the job."""
    return job_parser("rank", __doc__.splitlines()[0])


def run(spark, conf, args) -> int:
    """Rank the crawldb."""
    data = DataDir.at(args.data, conf)
    record(spark, data.root, "rank", None, rank(spark, conf, data))
    return 0


def link_graph(spark, data: DataDir, crawldb):
    """Distinct ``(src, dst)`` edges between crawldb URLs."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    parsed = [
        spark.read.format("delta")
        .load(data.segment(name).table("parse"))
        .select("url", F.col("outlinks.url").alias("targets"), F.lit(name).alias("segment"))
        for name in data.segment_names()
        if data.segment(name).done("parsed")
    ]
    redirects = crawldb.where(
        F.col("status").isin(st.REDIR_PERM, st.REDIR_TEMP) & F.col("redirect_to").isNotNull()
    ).select(F.col("url").alias("src"), F.col("redirect_to").alias("dst"))
    edges = redirects
    if parsed:
        pages = reduce(lambda a, b: a.unionByName(b), parsed)
        latest = Window.partitionBy("url").orderBy(F.col("segment").desc())
        pages = pages.withColumn("_n", F.row_number().over(latest)).where(F.col("_n") == 1)
        links = pages.select(F.col("url").alias("src"), F.explode("targets").alias("dst"))
        edges = edges.unionByName(links)
    nodes = crawldb.select("url")
    return (
        edges.where(F.col("src") != F.col("dst"))
        .distinct()
        .join(nodes.withColumnRenamed("url", "src"), "src", "left_semi")
        .join(nodes.withColumnRenamed("url", "dst"), "dst", "left_semi")
    )


def power_iteration(nodes, edges, conf) -> tuple:
    """``(url, pagerank)`` of every node, the steps taken and the last L1 change."""
    from pyspark.sql import functions as F

    damping = conf["rank.damping"]
    count = nodes.count()
    degrees = edges.groupBy("src").agg(F.count("*").alias("degree"))
    edges = edges.join(degrees, "src").localCheckpoint()
    ranks = (
        nodes.join(degrees.withColumnRenamed("src", "url"), "url", "left")
        .select(
            "url", F.coalesce("degree", F.lit(0)).alias("degree"), F.lit(1.0 / count).alias("rank")
        )
        .localCheckpoint()
    )
    dangling = 1.0 * ranks.where(F.col("degree") == 0).count() / count
    change, step = float("inf"), 0
    while step < conf["rank.max.iterations"] and change >= conf["rank.tolerance"]:
        step += 1
        flowing = (
            edges.join(ranks.select(F.col("url").alias("src"), "rank"), "src")
            .groupBy(F.col("dst").alias("url"))
            .agg(F.sum(F.col("rank") / F.col("degree")).alias("incoming"))
        )
        stepped = (
            ranks.join(flowing, "url", "left")
            .select(
                "url",
                "degree",
                next_rank(
                    F.coalesce("incoming", F.lit(0.0)), F.lit(dangling), count, damping
                ).alias("rank"),
                F.col("rank").alias("previous"),
            )
            .localCheckpoint()
        )
        figures = stepped.agg(
            F.sum(F.abs(F.col("rank") - F.col("previous"))).alias("change"),
            F.sum(F.when(F.col("degree") == 0, F.col("rank")).otherwise(0.0)).alias("dangling"),
        ).collect()[0]
        change, dangling = figures["change"], figures["dangling"] or 0.0
        ranks = stepped.drop("previous")
    return ranks.select("url", F.col("rank").alias("pagerank")), step, change


def rank(spark, conf, data: DataDir) -> dict:
    """Compute PageRank and write it to the crawldb in one Delta MERGE."""
    from delta.tables import DeltaTable

    clock = Stopwatch()
    crawldb = read_crawldb(spark, data).cache()
    edges = link_graph(spark, data, crawldb).localCheckpoint()
    urls, links = crawldb.count(), edges.count()
    ranks, steps, change = power_iteration(crawldb.select("url"), edges, conf)
    upgrade_crawldb(spark, data)
    with delta_commit_message(spark, "trawl rank"):
        (
            DeltaTable.forPath(spark, data.crawldb)
            .alias("t")
            .merge(ranks.alias("s"), "t.url = s.url")
            .whenMatchedUpdate(set={"pagerank": "s.pagerank"})
            .execute()
        )
    crawldb.unpersist()
    summary = {
        "urls": urls,
        "links": links,
        "iterations": steps,
        "change": change,
        "converged": change < conf["rank.tolerance"],
        "seconds": round(clock.seconds, 1),
    }
    progress("rank", [(key, summary[key]) for key in ("urls", "links", "iterations", "change")])
    return summary


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("rank", build_parser(), run, argv, crawldb_required)


if __name__ == "__main__":
    sys.exit(main())
