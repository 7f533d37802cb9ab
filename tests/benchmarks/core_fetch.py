"""Trawl's fetcher without Spark, for the fetch benchmark: ``PartitionFetcher`` over a list
of URLs in one process (robots.txt, politeness with delay 0, WARC writing included).

Shows how much of the fetch stage is the fetcher and how much is Spark and Delta.
Usage: python core_fetch.py URLS_FILE THREADS WARC_FILE; prints one JSON line.
"""

from __future__ import annotations

import json
import resource
import sys
import time

from lib.archive.warc import WarcFile
from lib.config import load_config
from lib.fetching.fetcher import PartitionFetcher
from lib.url.normalize import host_of


def main(path: str, threads: int, warc_path: str) -> None:
    """Fetch the URLs in one partition; print figures."""
    with open(path, encoding="utf-8") as handle:
        urls = [line.strip() for line in handle if line.strip()]
    conf = load_config(
        overrides=[
            "fetcher.server.delay=0",
            "fetcher.allow.private.networks=true",
            f"fetcher.threads.fetch={threads}",
            "http.agent.url=https://trawl.invalid/bench-core",
        ]
    )
    rows = [{"url": u, "host": host_of(u), "depth": 0, "score": 1.0} for u in urls]
    warc = WarcFile(warc_path, {"software": "Trawl benchmark"})
    start, cpu = time.monotonic(), time.process_time()
    pages = sum(1 for row in PartitionFetcher(conf, warc).run(rows) if row["origin"] != "robots")
    warc.close()
    wall = time.monotonic() - start
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"pages": pages, "seconds": wall, "cpu": cpu, "peak_bytes": peak}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
