"""Reference for the fetch benchmark: the bare fetch loop the issue's figures were taken
with, on aiohttp -- one asyncio event loop, one connection per host, CONCURRENCY hosts
at a time, each host's URLs one after the other, no delay, no parsing, no storage.
Prints one JSON line with its figures.
Usage: python bare_aiohttp.py URLS_FILE CONCURRENCY
"""

from __future__ import annotations

import asyncio
import sys
import time

import aiohttp
from bare_fetch import print_figures, urls_by_host  # beside this script


async def fetch_all(by_host: dict[str, list[str]], concurrency: int) -> int:
    """Fetch every host's URLs in turn, ``concurrency`` hosts at once; pages fetched."""
    hosts: asyncio.Queue = asyncio.Queue()
    for host_urls in by_host.values():
        hosts.put_nowait(host_urls)
    done = 0
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=1, ttl_dns_cache=300)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:

        async def work() -> None:
            nonlocal done
            while not hosts.empty():
                for url in hosts.get_nowait():
                    async with session.get(url, allow_redirects=False) as response:
                        await response.read()
                    done += 1

        await asyncio.gather(*(work() for _ in range(concurrency)))
    return done


def main(path: str, concurrency: int) -> None:
    """Fetch every URL of the file, host by host; print figures."""
    by_host = urls_by_host(path)
    start, cpu = time.monotonic(), time.process_time()
    print_figures(asyncio.run(fetch_all(by_host, concurrency)), start, cpu)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
