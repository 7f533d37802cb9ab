"""Reference for the fetch benchmark: the bare fetch-and-parse loop, the machine's limit
for a crawler without crawl logic. aiohttp and asyncio, one connection per host, each
page's links found with lxml and made absolute, its body gzipped; one process per core,
each given a share of the hosts (by a hash of the host). No robots.txt, no delay, no
storage. Prints one JSON line with its figures (pages: the answers it read).
Usage: python bare_parse.py URLS_FILE CONCURRENCY PROCESSES [USER_AGENT]
"""

from __future__ import annotations

import asyncio
import gzip
import json
import multiprocessing
import sys
import time
import zlib
from urllib.parse import urljoin

import aiohttp
import lxml.html
from bare_fetch import urls_by_host  # beside this script

USER_AGENT = "BareParse (+https://trawl.invalid/bench-bare-parse)"


def links_of(body: bytes, url: str) -> list[str]:
    """The page's links, absolute."""
    try:
        tree = lxml.html.fromstring(body)
    except (lxml.etree.ParserError, ValueError):
        return []
    return [urljoin(url, href) for href in tree.xpath("//a/@href")]


async def fetch_share(
    by_host: dict[str, list[str]], concurrency: int, agent: str
) -> tuple[int, int]:
    """Fetch, parse and gzip every URL of the hosts given; (pages, links found)."""
    hosts: asyncio.Queue = asyncio.Queue()
    for host_urls in by_host.values():
        hosts.put_nowait(host_urls)
    pages = links = 0
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=1, ttl_dns_cache=300)
    headers = {"User-Agent": agent}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def work() -> None:
            nonlocal pages, links
            while not hosts.empty():
                for url in hosts.get_nowait():
                    async with session.get(url, allow_redirects=False) as response:
                        body = await response.read()
                    links += len(links_of(body, url))
                    gzip.compress(body, compresslevel=6)
                    pages += 1

        await asyncio.gather(*(work() for _ in range(concurrency)))
    return pages, links


def run_share(args: tuple[dict[str, list[str]], int, str]) -> tuple[int, int]:
    return asyncio.run(fetch_share(*args))


def main(path: str, concurrency: int, processes: int, agent: str) -> None:
    """Fetch every URL of the file, host by host, in ``processes`` processes."""
    shares: list[dict[str, list[str]]] = [{} for _ in range(processes)]
    for host, urls in urls_by_host(path).items():
        shares[zlib.crc32(host.encode()) % processes][host] = urls
    start = time.monotonic()
    with multiprocessing.Pool(processes) as pool:
        done = pool.map(run_share, [(share, concurrency, agent) for share in shares])
    figures = {
        "pages": sum(pages for pages, _ in done),
        "links": sum(links for _, links in done),
        "seconds": time.monotonic() - start,
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), (sys.argv[4:] or [USER_AGENT])[0])
