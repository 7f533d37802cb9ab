"""What keeping the linkdb, or the hostdb, costs updatedb at scale, side by side.

Builds bench_crawldb's synthetic crawldb of ``--size`` URLs and its parsed segment of
100k pages with 10 outlinks each (1M links), copies the data directory, and runs
updatedb on the copies in turn, the table's key (``--table``: ``linkdb.enabled`` or
``hostdb.enabled``) off then on, the other table off in both, ``--pairs`` times.
linkdb: the first run creates it (1M rows); a later one merges into it, as a crawl's
next round would (its copy keeps the linkdb of the run before). hostdb: the source's
hostdb is counted from its crawldb first, as the round before would leave it; each run
keeps it from the round's changes. Prints one table; ``--write-doc`` puts it in
docs/benchmarks.md.

Run: ``.venv/bin/python tests/benchmarks/bench_linkdb.py [--table linkdb|hostdb]
[--size 1000000] [--pairs 2] [--work /tmp/trawl-bench-linkdb] [--write-doc]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))

from bench_crawldb import SEGMENT, TOPN, crawldb_frame, write_segment  # noqa: E402
from doc_tables import replace_block  # noqa: E402

from engine.runtime.layout import DataDir  # noqa: E402
from engine.runtime.session import build_spark  # noqa: E402
from lib.config import load_config  # noqa: E402


def settings(table: str, on: bool):
    other = "hostdb" if table == "linkdb" else "linkdb"
    return load_config(
        overrides=[
            f"generate.topN={TOPN}",
            "spark.ui.enabled=false",
            "spark.driver.memory=8g",
            "spark.sql.shuffle.partitions=16",
            f"{table}.enabled={str(on).lower()}",
            f"{other}.enabled=false",
        ]
    )


def build(spark, folder: Path, size: int, conf, table: str) -> None:
    from engine.executors.hostdb import recount_hostdb

    shutil.rmtree(folder, ignore_errors=True)
    data = DataDir.at(folder, conf)
    files = max(2, size // 1_000_000 * 2)
    crawldb_frame(spark, size).repartition(files).write.format("delta").save(data.crawldb)
    write_segment(spark, data, spark.read.format("delta").load(data.crawldb))
    if table == "hostdb":
        recount_hostdb(spark, data, in_driver=False)


def timed_update(spark, source: Path, target: Path, table: str, on: bool, keep) -> float:
    """updatedb of the segment on a fresh copy of ``source`` (with the linkdb of
    ``keep`` when given); seconds."""
    from jobs.updatedb import updatedb

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    if keep is not None and (keep / "linkdb").exists():
        shutil.copytree(keep / "linkdb", target / "linkdb")
    conf = settings(table, on)
    data = DataDir.at(target, conf)
    started = time.perf_counter()
    updatedb(spark, conf, data, data.segment(SEGMENT))
    return time.perf_counter() - started


# Per table: the first pair's row label, later pairs' label, the summary's sentence.
WHAT = {
    "linkdb": (
        "creates the linkdb",
        "merges into the linkdb",
        "on / off: {first:.2f} when the round creates the linkdb; **{later:.2f}** (median) "
        "when it merges into one, as every later round does, here updating every row (the "
        "same links again: the worst case). Target: at most 1.3.",
    ),
    "hostdb": (
        "keeps the hostdb",
        "keeps the hostdb",
        "on / off: **{all:.2f}** (median of the pairs): the round keeps the hostdb, as every "
        "round does, from the crawldb rows it changed and the hosts it asked, without a "
        "scan of the crawldb.",
    ),
}


def report(args, off: list[float], on: list[float], stored: int) -> str:
    """The benchmark's table and its summary line."""
    first, later, sentence = WHAT[args.table]
    rows = [
        f"| {number + 1} | {first if number == 0 else later} | {a:.1f} | {b:.1f} | {b / a:.2f} |"
        for number, (a, b) in enumerate(zip(off, on, strict=True))
    ]
    ratios = [b / a for a, b in zip(off, on, strict=True)]
    later_median = statistics.median(ratios[1:]) if len(ratios) > 1 else float("nan")
    summary = sentence.format(first=ratios[0], later=later_median, all=statistics.median(ratios))
    return "\n".join(
        [
            f"{args.size:,} crawldb URLs; a segment of 100,000 parsed pages with 10 outlinks "
            f"each; updatedb on copies of the same data directory, "
            f"{args.table}.enabled off and on in turn ({stored:,} {args.table} rows at the end).",
            "",
            f"| pair | {args.table} | updatedb off s | updatedb on s | on / off |",
            "|---:|---|---:|---:|---:|",
            *rows,
            "",
            summary,
            "",
        ]
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", choices=["linkdb", "hostdb"], default="linkdb")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/trawl-bench-linkdb"))
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRAWL_DRIVER_MEMORY", "8g")
    spark = build_spark(f"bench-{args.table}", settings(args.table, True))
    source = args.work / "source"
    build(spark, source, args.size, settings(args.table, True), args.table)
    off, on = [], []
    kept = None
    for number in range(args.pairs):
        target = args.work / f"off-{number}"
        off.append(timed_update(spark, source, target, args.table, False, None))
        target = args.work / f"on-{number}"
        on.append(timed_update(spark, source, target, args.table, True, kept))
        kept = target
        print(f"pair {number + 1}: off {off[-1]:.1f} s, on {on[-1]:.1f} s", flush=True)
    stored = spark.read.format("delta").load(str(kept / args.table)).count()
    text = report(args, off, on, stored)
    print(text)
    spark.stop()
    if args.write_doc:
        block = f"bench_{args.table}"
        heading = (
            f"## The {args.table}'s cost in updatedb: `tests/benchmarks/bench_linkdb.py "
            f"--table {args.table}`\n\n"
        )
        replace_block(block, f"<!-- {block} -->\n{heading}{text}<!-- /{block} -->")
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
