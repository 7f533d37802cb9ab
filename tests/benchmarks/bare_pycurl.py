"""Reference for the fetch benchmark: the bare fetch loop on Trawl's own HTTP stack,
libcurl through pycurl -- one curl handle (one kept connection) per host, hosts fetched
by a pool of threads, one host per thread at a time, no delay, no parsing, no storage.
Prints one JSON line with its figures.
Usage: python bare_pycurl.py URLS_FILE THREADS
"""

from __future__ import annotations

import sys

import pycurl
from bare_fetch import fetch_by_host  # beside this script


def fetch_host(host_urls: list[str]) -> int:
    """One host's URLs in turn on one handle (one kept connection)."""
    curl = pycurl.Curl()
    curl.setopt(pycurl.NOSIGNAL, 1)
    for url in host_urls:
        body: list[bytes] = []
        curl.setopt(pycurl.URL, url)
        curl.setopt(pycurl.WRITEFUNCTION, body.append)
        curl.perform()
        curl.getinfo(pycurl.RESPONSE_CODE)
        b"".join(body)
    curl.close()
    return len(host_urls)


if __name__ == "__main__":
    fetch_by_host(sys.argv[1], int(sys.argv[2]), fetch_host)
