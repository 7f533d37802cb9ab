"""A crawl that runs for months: many re-crawl rounds over one data directory, in one
driver (as a long-lived scheduler's worker would keep it), with the shipped
housekeeping (``maintain`` after a round when a threshold is reached, ``crawl.maintain``).

Round 1 crawls the test web from its hosts' home pages (``--web ring``), or every
article of its news web, whose exact and near copies the round's dedup marks
(``--web news``, depth 0); every later round is ``crawl --rounds 1 --adddays 31*r``:
every page is due again (a month later each time).
Prints per round: wall time, the crawldb's active files and bytes (its current version,
by delta-rs), the files and bytes on disk under ``crawldb/`` (older versions' files
included), the ``_delta_log`` folder's files and bytes, the driver's JVM heap in use
after full GCs (2 GB at most, submit.sh's default), and the driver's Python RSS. Then
the means of rounds 6-15 and 41-50 (or the last ten) side by side: the targets are a
wall time and a heap within 1.2x.

VACUUM keeps ``db.retention.hours`` of history: a soak of minutes would keep all of it
at the default (a week), so the benchmark sets ``--retention-hours`` (default 0) and
``--vacuum-interval-hours`` (default 0.05, three minutes) to show the files on disk
bounded by the rule; every other setting is the default.

Run: ``.venv/bin/python tests/benchmarks/bench_soak.py [--hosts 200] [--rounds 50]
[--web news --hosts 40 --articles 40]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from deltalake import DeltaTable  # noqa: E402

from jobs import crawl  # noqa: E402
from testweb.server import TestWeb, loopback_hosts  # noqa: E402


def folder_figures(folder: Path) -> tuple[int, int]:
    """Files and bytes under ``folder``."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def crawldb_figures(data: Path) -> dict:
    """The crawldb's active files and bytes, its files on disk and its log."""
    crawldb = data / "crawldb"
    active = [Path(uri.removeprefix("file://")) for uri in DeltaTable(str(crawldb)).file_uris()]
    log_files, log_bytes = folder_figures(crawldb / "_delta_log")
    disk_files, disk_bytes = folder_figures(crawldb)
    return {
        "active_files": len(active),
        "active_mb": sum(path.stat().st_size for path in active) / 2**20,
        "disk_files": disk_files - log_files,
        "disk_mb": (disk_bytes - log_bytes) / 2**20,
        "log_files": log_files,
        "log_kb": log_bytes / 2**10,
    }


def driver_memory() -> dict:
    """The driver JVM's heap in use after full GCs, and this process's RSS."""
    from pyspark.sql import SparkSession

    jvm = SparkSession.getActiveSession()._jvm
    # Twice, a second apart: Spark's ContextCleaner drops the blocks (broadcasts, shuffle
    # state) of what the first collection found unreachable, for the second to free.
    jvm.java.lang.System.gc()
    time.sleep(1.0)
    jvm.java.lang.System.gc()
    runtime = jvm.java.lang.Runtime.getRuntime()
    heap = (runtime.totalMemory() - runtime.freeMemory()) / 2**20
    status = Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]
    return {"heap_mb": heap, "rss_mb": int(status) / 2**10}


def seed_urls(web: TestWeb, args) -> list[str]:
    """The soak's seeds on ``args.web``."""
    if args.web == "ring":
        return [f"{web.site.base(i)}/" for i in range(args.hosts)]
    return web.site.news.all_urls()


def main(argv=None) -> int:
    """Run the soak and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--pages", type=int, default=8, help="pages of each host")
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--retention-hours", default="0")
    parser.add_argument("--vacuum-interval-hours", default="0.05")
    parser.add_argument(
        "--web",
        choices=("ring", "news"),
        default="ring",
        help="ring: the hosts' home pages as seeds, their links followed; news: every "
        "article of testweb.news (realistic text, exact and near copies) as seeds, so "
        "that every round's dedup marks copies",
    )
    parser.add_argument("--articles", type=int, default=12, help="news articles per host")
    parser.add_argument("--conf", action="append", default=[], help="KEY=VALUE, repeatable")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    web = TestWeb(
        loopback_hosts(args.hosts, subnet=90),
        0,
        work / "requests.jsonl",
        crawl_delay=0.0,
        pages_per_host=args.pages,
        news_articles=args.articles,
    ).start()
    seeds = work / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in seed_urls(web, args)))
    settings = [
        "fetcher.server.delay=0",
        "fetcher.allow.private.networks=true",
        "http.agent.url=https://trawl.invalid/bench-soak",
        *(["db.max.depth=0"] if args.web == "news" else []),  # the articles, every round
        f"db.retention.hours={args.retention_hours}",
        f"db.vacuum.interval.hours={args.vacuum_interval_hours}",
        "spark.driver.memory=2g",  # submit.sh's default (TRAWL_DRIVER_MEMORY)
        *args.conf,
    ]
    conf = [part for item in settings for part in ("--conf", item)]
    data = work / "data"
    rows = []
    print(
        "| round | wall s | active files | active MB | disk files | disk MB | log files "
        "| log KB | heap MB | RSS MB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    try:
        for number in range(1, args.rounds + 1):
            first = ["--seeds", str(seeds)] if number == 1 else []
            later = ["--adddays", str(31 * (number - 1))]
            started = time.perf_counter()
            code = crawl.main([*first, "--rounds", "1", "--data", str(data), *later, *conf])
            row = {"round": number, "wall_s": time.perf_counter() - started}
            assert code == 0, f"round {number} exited {code}"
            row |= crawldb_figures(data) | driver_memory()
            rows.append(row)
            print(
                f"| {number} | {row['wall_s']:.1f} | {row['active_files']} "
                f"| {row['active_mb']:.1f} | {row['disk_files']} | {row['disk_mb']:.1f} "
                f"| {row['log_files']} | {row['log_kb']:.0f} | {row['heap_mb']:.0f} "
                f"| {row['rss_mb']:.0f} |",
                flush=True,
            )
    finally:
        web.stop()
    print_summary(rows)
    shutil.rmtree(work, ignore_errors=True)
    return 0


def print_summary(rows: list[dict]) -> None:
    """Means of rounds 6-15 against the last ten, and the largest file counts."""
    early, late = rows[5:15], rows[-10:]
    if not early or not late:
        return
    print(
        f"\nrounds {early[0]['round']}-{early[-1]['round']} vs "
        f"{late[0]['round']}-{late[-1]['round']} (mean, late / early):"
    )
    for key in ("wall_s", "heap_mb", "rss_mb", "active_files", "disk_files", "log_files"):
        before = statistics.fmean(r[key] for r in early)
        after = statistics.fmean(r[key] for r in late)
        print(f"  {key:<12} {before:9.1f} {after:9.1f}  {after / before:5.2f}x")
    print("  most active files in a round:", max(r["active_files"] for r in rows))
    print("  most files on disk after a round:", max(r["disk_files"] for r in rows))


if __name__ == "__main__":
    sys.exit(main())
