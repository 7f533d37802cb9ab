"""What keeping the linkdb costs updatedb at scale, side by side.

Builds bench_crawldb's synthetic crawldb of ``--size`` URLs and its parsed segment of
100k pages with 10 outlinks each (1M links), copies the data directory, and runs
updatedb on the copies in turn, ``linkdb.enabled`` off then on, ``--pairs`` times
(the first linkdb run creates the linkdb: 1M rows; a later one merges into it, as a
crawl's next round would -- its copy keeps the linkdb of the run before). Prints one
table; ``--write-doc`` puts it in docs/benchmarks.md.

Run: ``.venv/bin/python tests/benchmarks/bench_linkdb.py [--size 1000000] [--pairs 2]
[--work /tmp/trawl-bench-linkdb] [--write-doc]``.
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

BLOCK = "bench_linkdb"


def settings(linkdb: bool):
    return load_config(
        overrides=[
            f"generate.topN={TOPN}",
            "spark.ui.enabled=false",
            "spark.driver.memory=8g",
            "spark.sql.shuffle.partitions=16",
            f"linkdb.enabled={str(linkdb).lower()}",
        ]
    )


def build(spark, folder: Path, size: int, conf) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    data = DataDir.at(folder, conf)
    files = max(2, size // 1_000_000 * 2)
    crawldb_frame(spark, size).repartition(files).write.format("delta").save(data.crawldb)
    write_segment(spark, data, spark.read.format("delta").load(data.crawldb))


def timed_update(spark, source: Path, target: Path, linkdb: bool, keep: Path | None) -> float:
    """updatedb of the segment on a fresh copy of ``source`` (with the linkdb of
    ``keep`` when given); seconds."""
    from jobs.updatedb import updatedb

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    if keep is not None and (keep / "linkdb").exists():
        shutil.copytree(keep / "linkdb", target / "linkdb")
    conf = settings(linkdb)
    data = DataDir.at(target, conf)
    started = time.perf_counter()
    updatedb(spark, conf, data, data.segment(SEGMENT))
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/trawl-bench-linkdb"))
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRAWL_DRIVER_MEMORY", "8g")
    spark = build_spark("bench-linkdb", settings(True))
    source = args.work / "source"
    build(spark, source, args.size, settings(True))
    off, on = [], []
    kept = None
    for number in range(args.pairs):
        off.append(timed_update(spark, source, args.work / f"off-{number}", False, None))
        on.append(timed_update(spark, source, args.work / f"on-{number}", True, kept))
        kept = args.work / f"on-{number}"
        print(f"pair {number + 1}: off {off[-1]:.1f} s, on {on[-1]:.1f} s", flush=True)
    links = spark.read.format("delta").load(str(kept / "linkdb")).count()
    rows = [
        f"| {number + 1} | {'creates' if number == 0 else 'merges into'} the linkdb | "
        f"{a:.1f} | {b:.1f} | {b / a:.2f} |"
        for number, (a, b) in enumerate(zip(off, on, strict=True))
    ]
    created = on[0] / off[0]
    merges = [b / a for a, b in zip(off[1:], on[1:], strict=True)]
    merged = statistics.median(merges) if merges else float("nan")
    text = "\n".join(
        [
            f"{args.size:,} crawldb URLs; a segment of 100,000 parsed pages with 10 outlinks "
            f"each; updatedb on copies of the same data directory, "
            f"linkdb.enabled off and on in turn ({links:,} linkdb rows at the end).",
            "",
            "| pair | linkdb | updatedb off s | updatedb on s | on / off |",
            "|---:|---|---:|---:|---:|",
            *rows,
            "",
            f"on / off: {created:.2f} when the round creates the linkdb; **{merged:.2f}** "
            "(median) when it merges into one, as every later round does, here updating every "
            "row (the same links again: the worst case). Target: at most 1.3.",
            "",
        ]
    )
    print(text)
    spark.stop()
    if args.write_doc:
        heading = "## The linkdb's cost in updatedb: `tests/benchmarks/bench_linkdb.py`\n\n"
        replace_block(BLOCK, f"<!-- {BLOCK} -->\n{heading}{text}<!-- /{BLOCK} -->")
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
