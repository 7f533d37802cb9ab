"""Where the driver's round stops paying: generate and updatedb in the driver against
Spark's way, on synthetic crawldbs of growing size (``db.driver.urls``' default).

For each size N the benchmark writes ``bench_crawldb``'s synthetic crawldb (100 URLs a
host, 30 % fetched with hash, SimHash, MinHash and title) and a parsed segment of N / 10
of its due pages, each with 10 outlinks to URLs not in the crawldb (N new URLs: the
crawldb doubles, as in a crawl's early rounds). Then on two copies of it, each in a
process of its own (a JVM and a driver of its own, so that each way's peak memory is its
own), it times

* ``generate`` (topN N / 10) and
* ``updatedb`` of the segment with the round's dedup pass (crawl's way),

once with ``db.driver.urls`` above N (the driver's way: delta-rs, Arrow and Python) and
once with 0 (Spark's way), and reports each process's peak resident memory (the driver's
Python; Spark's JVM runs apart). The driver's way holds the crawldb in the driver; its
time grows with the rows it touches, Spark's is mostly fixed cost.

Run: ``.venv/bin/python tests/benchmarks/bench_driver_limit.py [--sizes 50000 200000
800000] [--work /tmp/trawl-bench-driver-limit] [--write-doc]`` (``--write-doc``: the
table in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import bench_crawldb  # noqa: E402
from doc_tables import replace_block  # noqa: E402

from engine.runtime.layout import DataDir  # noqa: E402
from engine.runtime.session import build_spark  # noqa: E402
from lib.config import load_config  # noqa: E402

WAYS = {"driver": None, "spark": 0}  # db.driver.urls: None = above the size
SECTION = "bench_driver_limit"


def settings(size: int, limit: int | None) -> list[str]:
    """The configuration of one way at one size."""
    return [
        f"generate.topN={size // 10}",
        f"db.driver.urls={size * 10 if limit is None else limit}",
        "spark.ui.enabled=false",
        "spark.sql.shuffle.partitions=4",
        "spark.driver.memory=2g",  # submit.sh's default (TRAWL_DRIVER_MEMORY)
    ]


def build(size: int, folder: Path) -> None:
    """The synthetic crawldb and segment of ``size`` URLs at ``folder``."""
    conf = load_config(overrides=settings(size, 0))
    spark = build_spark("bench-driver-limit", conf)
    shutil.rmtree(folder, ignore_errors=True)
    data = DataDir.at(folder, conf)
    bench_crawldb.SEGMENT_PAGES = size // 10
    frame = bench_crawldb.crawldb_frame(spark, size)
    frame.repartition(2).write.format("delta").save(data.crawldb)
    bench_crawldb.write_segment(spark, data, spark.read.format("delta").load(data.crawldb))
    spark.stop()


def measure(size: int, way: str, folder: Path) -> dict:
    """One way's generate and updatedb on the crawl at ``folder`` (run in a child)."""
    from jobs.generate import generate
    from jobs.updatedb import updatedb

    conf = load_config(overrides=settings(size, WAYS[way]))
    spark = build_spark("bench-driver-limit", conf)
    data = DataDir.at(folder, conf)
    started = time.perf_counter()
    generate(spark, conf, data, 0.0)
    generated = time.perf_counter() - started
    started = time.perf_counter()
    summary = updatedb(spark, conf, data, data.segment(bench_crawldb.SEGMENT), dedup=True)
    updated = time.perf_counter() - started
    spark.stop()
    return {
        "generate_s": round(generated, 1),
        "updatedb_s": round(updated, 1),
        "changed": summary["changed"],
        "crawldb": summary["crawldb"],
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def run_child(size: int, way: str, folder: Path) -> dict:
    command = [sys.executable, __file__, "--child", way, str(size), str(folder)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"{way} at {size}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(results: list[dict]) -> list[str]:
    """The figures as a Markdown table, each size's two ways side by side."""
    lines = [
        "| crawldb URLs | way | generate s | updatedb s | both s | rows changed "
        "| crawldb after | peak MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        both = round(r["generate_s"] + r["updatedb_s"], 1)
        lines.append(
            f"| {r['size']:,} | {r['way']} | {r['generate_s']} | {r['updatedb_s']} | {both} "
            f"| {r['changed']:,} | {r['crawldb']:,} | {r['peak_mb']:,} |"
        )
    return lines


def write_doc(results: list[dict]) -> None:
    block = [f"<!-- {SECTION} -->", f"Run of {time.strftime('%Y-%m-%d %H:%M')}.", ""]
    replace_block(SECTION, "\n".join([*block, *table(results), f"<!-- /{SECTION} -->"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 200_000, 800_000])
    parser.add_argument("--work", type=Path, default=Path("/tmp/trawl-bench-driver-limit"))
    parser.add_argument("--write-doc", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        way, size, folder = args.child
        print(json.dumps(measure(int(size), way, Path(folder))))
        return 0
    results = []
    for size in args.sizes:
        source = args.work / f"crawl-{size}"
        build(size, source)
        for way in WAYS:
            copy = args.work / f"{way}-{size}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(source, copy)
            results.append({"size": size, "way": way, **run_child(size, way, copy)})
            print(table(results)[-1], flush=True)
            shutil.rmtree(copy, ignore_errors=True)
        shutil.rmtree(source, ignore_errors=True)
    print("\n".join(table(results)))
    if args.write_doc:
        write_doc(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
