"""Reference for the fetch benchmark: the barest polite fetch loop over a list of URLs.

One urllib3 connection per host, hosts fetched by a pool of threads, one host per thread
at a time, no delay, no parsing, no storage. Prints one JSON line with its figures.
Usage: python bare_fetch.py URLS_FILE THREADS
"""

from __future__ import annotations

import json
import queue
import resource
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from urllib.parse import urlsplit

import urllib3


def urls_by_host(path: str) -> dict[str, list[str]]:
    """The URLs of the file (one a line), grouped by host in the file's order."""
    by_host: dict[str, list[str]] = defaultdict(list)
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                by_host[urlsplit(line.strip()).hostname].append(line.strip())
    return by_host


def print_figures(pages: int, start: float, cpu: float) -> None:
    """One JSON line: pages, wall and CPU seconds since ``start`` and ``cpu`` (from
    ``time.monotonic`` and ``time.process_time``), peak memory."""
    wall = time.monotonic() - start
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"pages": pages, "seconds": wall, "cpu": cpu, "peak_bytes": peak}))


def fetch_by_host(path: str, threads: int, fetch_host: Callable[[list[str]], int]) -> None:
    """Call ``fetch_host`` on each host's URLs from a pool of ``threads`` threads, one host
    per thread at a time; print the figures (pages: the sum of what it returned)."""
    by_host = urls_by_host(path)
    hosts: queue.Queue = queue.Queue()
    for host_urls in by_host.values():
        hosts.put(host_urls)
    fetched: list[int] = []

    def work() -> None:
        while True:
            try:
                fetched.append(fetch_host(hosts.get_nowait()))
            except queue.Empty:
                return

    start, cpu = time.monotonic(), time.process_time()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print_figures(sum(fetched), start, cpu)


def main(path: str, threads: int) -> None:
    """Fetch every URL of the file, host by host; print figures."""
    pool = urllib3.PoolManager(num_pools=len(urls_by_host(path)) + 1, maxsize=1, retries=False)

    def fetch_host(host_urls: list[str]) -> int:
        for url in host_urls:
            response = pool.request("GET", url, redirect=False)
            response.data  # noqa: B018 - read the body
        return len(host_urls)

    fetch_by_host(path, threads, fetch_host)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
