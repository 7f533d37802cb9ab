"""What a Prometheus scrape of the API's /metrics costs on a large crawl.

Builds a data directory with a synthetic crawldb of ``--size`` URLs (bench_crawldb's
rows, written by Spark's Delta writer as Trawl's jobs write it), a metrics table of
``--rounds`` fetch runs with ``--hosts`` per-host rows each (and updatedb, dedup rows),
and a robots cache of one row per host; serves it with ``./submit.sh api``; then times,
over HTTP as Prometheus would ask:

* the first scrape, asked as soon as the server answers (it waits for the figures' first
  read, which the server starts as it starts),
* ``--scrapes`` scrapes in a row (the tables unchanged),
* the first scrape after a round's commits to the crawldb, the metrics table and the
  robots cache (it gets the figures read before; a thread reads the new ones),

and the dashboard page likewise. Prints one table; ``--write-doc`` puts it in
docs/benchmarks.md.

Run: ``.venv/bin/python tests/benchmarks/bench_scrape.py [--size 1000000] [--hosts 10000]
[--rounds 20] [--scrapes 50] [--work /tmp/trawl-bench-scrape] [--write-doc]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))

from bench_crawldb import crawldb_frame  # noqa: E402
from doc_tables import replace_block  # noqa: E402
from servers import api_server  # noqa: E402

KEY = "bench-scrape-key"
BLOCK = "bench_scrape"


def build(work: Path, size: int, hosts: int, rounds: int) -> Path:
    """The data directory: crawldb, metrics and robots tables."""
    from engine.runtime.layout import DataDir
    from engine.runtime.session import build_spark
    from lib.config import load_config

    root = work / "data"
    shutil.rmtree(work, ignore_errors=True)
    conf = load_config()
    spark = build_spark("bench-scrape", conf)
    data = DataDir.at(root, conf)
    files = max(2, size // 1_000_000 * 2)
    crawldb_frame(spark, size).repartition(files).write.format("delta").save(data.crawldb)
    write_metrics(str(root), hosts, rounds)  # its schema parsed by the session
    spark.stop()
    write_robots(data.robots, hosts)
    return root


def write_metrics(root: str, hosts: int, rounds: int, first: int = 0) -> None:
    """``rounds`` fetch rows of ``hosts`` hosts each, with updatedb and dedup rows."""
    from engine.tables.metrics import _append, _stored_schema

    schema = _stored_schema()
    for number in range(first, first + rounds):
        segment = f"2026113000{number:04d}"
        host_rows = [
            {
                "host": f"www.site{h}.example.com",
                "urls": 10,
                "pages": 9,
                "errors": h % 3,
                "bytes": 140_000,
                "avg_ms": 40.0 + h % 50,
                "max_ms": 900.0,
                "median_ms": 30.0 + h % 70,
                "answers": 9,
            }
            for h in range(hosts)
        ]
        fetch = {
            "urls": 10.0 * hosts,
            "pages": 9.0 * hosts,
            "errors": 1.0 * hosts,
            "pages_per_second": 900.0,
            "deferred": 0.0,
            "bytes": 1.4e9,
        }
        _append(
            None,
            root,
            ("fetch", segment, 1_796_000_000_000 + number * 600_000, 60.0, fetch),
            lambda rows=host_rows: rows,
            schema,
        )
        for job, figures in (("updatedb", {"changed": 1e5}), ("dedup", {"duplicates": 10.0})):
            moment = 1_796_000_000_000 + number * 600_000 + 30_000
            _append(None, root, (job, segment, moment, 20.0, figures), None, schema)


def write_robots(path: str, hosts: int) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    statuses = [200 if h % 10 else 404 for h in range(hosts)]
    table = pa.table(
        {
            "host": [f"www.site{h}.example.com" for h in range(hosts)],
            "http_status": pa.array(statuses, pa.int32()),
        }
    )
    write_deltalake(path, table)


def timed(session: requests.Session, url: str) -> float:
    started = time.perf_counter()
    answer = session.get(url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120)
    answer.raise_for_status()
    return (time.perf_counter() - started) * 1000


def measure(base: str, root: Path, scrapes: int, hosts: int) -> list[tuple[str, str, float]]:
    """(page, moment, ms) rows: the first, the median of the next, after a commit."""
    from engine.tables.health import log_stamp

    session = requests.Session()
    rows = []
    for page in ("metrics", "dashboard"):
        url = f"{base}/{page}"
        rows.append(
            (page, "first, as the server starts (waits for its first read)", timed(session, url))
        )
        steady = [timed(session, url) for _ in range(scrapes)]
        rows.append((page, f"median of {scrapes} (cached)", statistics.median(steady)))
        rows.append((page, f"slowest of {scrapes} (cached)", max(steady)))
        before = log_stamp(str(root / "crawldb"))
        commit(root, hosts)
        assert log_stamp(str(root / "crawldb")) != before
        rows.append((page, "first after a round's commits", timed(session, url)))
    return rows


def commit(root: Path, hosts: int) -> None:
    """The commits a round makes to what the figures read: the crawldb (an append that
    adds no row), the metrics table (a fetch row of ``hosts`` hosts, updatedb's and
    dedup's rows) and the robots cache."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    for table in ("crawldb", "robots"):
        schema = pa.schema(DeltaTable(str(root / table)).schema().to_arrow())
        write_deltalake(str(root / table), pa.Table.from_pylist([], schema=schema), mode="append")
    write_metrics(str(root), hosts, 1, first=1_000)


def table(rows, size: int, hosts: int, rounds: int) -> str:
    lines = [
        f"{size:,} crawldb URLs, {rounds} fetch rows of {hosts:,} hosts in the metrics "
        f"table, {hosts:,} robots.txt rows; GET over loopback with the API key "
        "(milliseconds, the client's wall clock).",
        "",
        "| page | scrape | ms |",
        "|---|---|---:|",
    ]
    lines += [f"| /{page} | {moment} | {ms:.1f} |" for page, moment, ms in rows]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--scrapes", type=int, default=50)
    parser.add_argument("--work", type=Path, default=Path("/tmp/trawl-bench-scrape"))
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args(argv)
    root = build(args.work, args.size, args.hosts, args.rounds)
    with api_server(root, args.work / "api.log", env={"TRAWL_API_KEYS": KEY}) as base:
        rows = measure(base, root, args.scrapes, args.hosts)
    text = table(rows, args.size, args.hosts, args.rounds)
    print(text)
    if args.write_doc:
        heading = "## Crawl health scrapes: `tests/benchmarks/bench_scrape.py`\n\n"
        replace_block(BLOCK, f"<!-- {BLOCK} -->\n{heading}{text}<!-- /{BLOCK} -->")
    return 0


if __name__ == "__main__":
    sys.exit(main())
