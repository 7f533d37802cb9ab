"""readdb: read the crawldb: statistics, a dump, or one URL's record.

Usage: ``submit.sh readdb --data DIR (--stats [--json] | --hosts N [--json] | --topN N
[--json] | --dump OUT | --dump-parquet OUT | --url URL)``.
``--stats``: counts by status and reason, score min/avg/max, hosts, fetched pages,
links rejected, freshness (due, overdue, fetched within interval, ages; engine.executors.freshness),
the 10 largest hosts by status, and the crawl round by round (from the metrics table);
``--hosts N``: the N hosts with most URLs, with their counts by status; ``--topN N``:
the N URLs of highest score (Nutch's readdb -topN), with their score, PageRank, status;
``--dump OUT``: the whole crawldb as JSON lines under OUT; ``--dump-parquet OUT``: its
current rows as plain Parquet files under OUT (each URL once, for a tool without a Delta
reader: a glob over the crawldb's own files also reads the files replaced by later
versions); ``--url URL``: one record (the URL is normalized first), as JSON.
"""

from __future__ import annotations

import json
import sys

from engine.executors.freshness import freshness
from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import DataDir, crawldb_required
from engine.tables.frames import print_record
from engine.tables.metrics import read_metrics
from engine.tables.store import read_crawldb
from lib import vocabulary as st
from lib.clock import now_ms


def build_parser():
    """Command line of the job."""
    parser = job_parser("readdb", __doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--stats", action="store_true", help="print statistics")
    action.add_argument("--dump", metavar="OUT", help="write the crawldb as JSON lines to OUT")
    action.add_argument(
        "--dump-parquet",
        metavar="OUT",
        help="write the crawldb's current rows as plain Parquet files to OUT",
    )
    action.add_argument("--url", help="print the record of one URL")
    action.add_argument(
        "--hosts", type=int, metavar="N", help="the N hosts with most URLs, by status"
    )
    action.add_argument(
        "--topN", type=int, metavar="N", help="the N URLs of highest score, with their status"
    )
    parser.add_argument(
        "--json", action="store_true", help="machine-readable --stats, --hosts, --topN"
    )
    return parser


def run(spark, conf, args) -> int:
    """Run the chosen action."""
    data = DataDir.at(args.data, conf)
    crawldb = read_crawldb(spark, data)
    if args.stats:
        figures = stats(crawldb)
        figures["rejected"] = rejected_links(data)
        figures["freshness"] = freshness(crawldb, now_ms())
        figures["top_hosts"] = top_hosts(crawldb, TOP_HOSTS_IN_STATS)
        figures["rounds"] = rounds(spark, data)
        print(json.dumps(figures, indent=2, sort_keys=True) if args.json else format_stats(figures))
        return 0
    if args.hosts is not None:
        hosts = top_hosts(crawldb, args.hosts)
        print(json.dumps(hosts, indent=2) if args.json else format_hosts(hosts))
        return 0
    if args.topN is not None:
        urls = top_urls(crawldb, args.topN)
        print(json.dumps(urls, indent=2) if args.json else format_urls(urls))
        return 0
    if args.dump:
        crawldb.write.mode("overwrite").json(args.dump)
        print(f"readdb: crawldb written as JSON lines to {args.dump}")
        return 0
    if args.dump_parquet:
        crawldb.write.mode("overwrite").parquet(args.dump_parquet)
        print(f"readdb: crawldb's current rows written as Parquet to {args.dump_parquet}")
        return 0
    return print_url(crawldb, args.url)


def stats(crawldb) -> dict:
    """Statistics of the crawldb as a JSON-ready dict."""
    from pyspark.sql import functions as F

    totals = crawldb.agg(
        F.count("*").alias("urls"),
        F.countDistinct("host").alias("hosts"),
        F.min("score").alias("min"),
        F.avg("score").alias("avg"),
        F.max("score").alias("max"),
        F.max("depth").alias("max_depth"),
    ).collect()[0]
    by_status = {r["status"]: r["count"] for r in crawldb.groupBy("status").count().collect()}
    by_reason = {
        f"{r['status']}/{r['reason']}": r["count"]
        for r in crawldb.where("reason IS NOT NULL").groupBy("status", "reason").count().collect()
    }
    fetched_hosts = crawldb.where(F.col("status") == st.FETCHED).select("host").distinct()
    return {
        "urls": totals["urls"],
        "hosts": totals["hosts"],
        "fetched_pages": by_status.get(st.FETCHED, 0),
        "fetched_hosts": fetched_hosts.count(),
        "max_depth": totals["max_depth"],
        "score": {k: _round(totals[k]) for k in ("min", "avg", "max")},
        "status": dict(sorted(by_status.items())),
        "reason": dict(sorted(by_reason.items())),
    }


TOP_HOSTS_IN_STATS = 10
ROUND_FIGURES = {  # column of --stats' rounds: (job, figure in the metrics table)
    "generated": ("generate", "urls"),
    "fetched": ("fetch", "pages"),
    "errors": ("fetch", "errors"),
    "deferred": ("fetch", "deferred"),
    "pages/s": ("fetch", "pages_per_second"),
    "skew": ("fetch", "skew"),
    "new urls": ("updatedb", "new"),
    "crawldb": ("updatedb", "crawldb"),
}


def top_hosts(crawldb, count: int) -> list[dict]:
    """The ``count`` hosts with most URLs: their URLs, counts by status, average score."""
    from pyspark.sql import functions as F

    by_status = [
        F.sum((F.col("status") == name).cast("long")).alias(name) for name in st.DB_STATUSES
    ]
    rows = (
        crawldb.groupBy("host")
        .agg(F.count("*").alias("urls"), *by_status, F.avg("score").alias("avg_score"))
        .orderBy(F.desc("urls"), "host")
        .limit(count)
        .collect()
    )
    return [
        {**{k: v for k, v in row.asDict().items() if v != 0}, "avg_score": _round(row["avg_score"])}
        for row in rows
    ]


def rounds(spark, data: DataDir) -> list[dict]:
    """Per segment, oldest first, the figures of its stages (from the metrics table)."""
    from pyspark.sql import functions as F

    metrics = read_metrics(spark, data.root)
    if metrics is None:
        return []
    table: dict[str, dict] = {}
    for row in metrics.where(F.col("segment").isNotNull()).collect():
        entry = table.setdefault(row["segment"], {"segment": row["segment"]})
        for label, (job, figure) in ROUND_FIGURES.items():
            if row["job"] == job and figure in (row["figures"] or {}):
                entry[label] = row["figures"][figure]
        entry[f"{row['job']} s"] = row["seconds"]
    return [table[name] for name in sorted(table)]


def format_hosts(hosts: list[dict]) -> str:
    """Top hosts as readable lines."""
    lines = []
    for host in hosts:
        counts = ", ".join(f"{name} {host[name]}" for name in st.DB_STATUSES if name in host)
        lines.append(
            f"{host['host']}\t{host['urls']} urls: {counts}; avg score {host['avg_score']}"
        )
    return "\n".join(lines)


def format_rounds(table: list[dict]) -> list[str]:
    """The crawl round by round, one line per segment."""
    lines = []
    for entry in table:
        shown = [f"{label} {_number(entry[label])}" for label in ROUND_FIGURES if label in entry]
        lines.append(f"round {entry['segment']}:\t{', '.join(shown)}")
    return lines


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def top_urls(crawldb, count: int) -> list[dict]:
    """The ``count`` URLs of highest score (ties: the higher PageRank, then the URL)."""
    from pyspark.sql import functions as F

    order = [F.col("score").desc_nulls_last(), F.col("pagerank").desc_nulls_last(), "url"]
    chosen = crawldb.select("url", "score", "pagerank", "status").orderBy(*order).limit(count)
    return [row.asDict() for row in chosen.collect()]


def format_urls(urls: list[dict]) -> str:
    """``--topN``'s table: score, PageRank, status, URL."""
    lines = [f"{'score':>10} {'pagerank':>10} {'status':<12} url"]
    for row in urls:
        rank = "-" if row["pagerank"] is None else f"{row['pagerank']:.6f}"
        lines.append(f"{_number(row['score']):>10} {rank:>10} {row['status']:<12} {row['url']}")
    return "\n".join(lines)


def rejected_links(data: DataDir) -> dict[str, int]:
    """Links kept out of the crawldb over all rounds, by reason (from updatedb's figures)."""
    totals: dict[str, int] = {}
    for name in data.segment_names():
        segment = data.segment(name)
        if segment.done("updated"):
            for reason, count in segment.summary("updated").get("rejected", {}).items():
                totals[reason] = totals.get(reason, 0) + count
    return dict(sorted(totals.items()))


def _round(value):
    return None if value is None else round(float(value), 6)


def format_stats(figures: dict) -> str:
    """Statistics as readable lines, in the style of Nutch's readdb -stats."""
    lines = [
        f"TOTAL urls:\t{figures['urls']}",
        f"hosts:\t{figures['hosts']}",
        f"fetched pages:\t{figures['fetched_pages']} from {figures['fetched_hosts']} hosts",
        f"max depth:\t{figures['max_depth']}",
        "score (min/avg/max):\t{min} / {avg} / {max}".format(**figures["score"]),
    ]
    lines += [f"status {name}:\t{count}" for name, count in figures["status"].items()]
    lines += [f"reason {name}:\t{count}" for name, count in figures["reason"].items()]
    lines += [f"rejected {name}:\t{count}" for name, count in figures.get("rejected", {}).items()]
    if "freshness" in figures:
        fresh = figures["freshness"]
        lines += [
            f"due now:\t{fresh['due']:.1%} of urls ({fresh['overdue']:.1%} overdue)",
            f"fetched within interval:\t{fresh['fresh']:.1%} of {fresh['pages']} pages",
        ]
        lines += [f"age {name} days:\t{count}" for name, count in fresh["age_days"].items()]
    if figures.get("top_hosts"):
        lines += ["top hosts:", format_hosts(figures["top_hosts"])]
    lines += format_rounds(figures.get("rounds", []))
    return "\n".join(lines)


def print_url(crawldb, url: str) -> int:
    """Print one URL's record as JSON; 1 when it is not in the crawldb."""
    return print_record(crawldb, url, "readdb", "the crawldb")


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("readdb", build_parser(), run, argv, crawldb_required)


if __name__ == "__main__":
    sys.exit(main())
