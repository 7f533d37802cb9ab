"""Parse benchmark (issue 5): parse and fingerprint CPU time per page, side by side.

Builds PAGES test pages from the local test web's site model (no network), then
measures, in one run: lxml parse + links + text (``parse_page`` with fingerprints
switched off by timing them apart), Trawl's vectorised SimHash, and the simhash
package on the same features. Prints ms/page and the ratios.
Usage: ``.venv/bin/python tests/benchmarks/bench_parse.py [--pages 10000]``.
"""

from __future__ import annotations

import argparse
import time

from lib.config import load_config
from lib.fingerprint import content_hash, simhash64, simhash64_reference
from lib.parse import parse_page
from testweb.site import Site


def pages(count: int) -> list[bytes]:
    site = Site(tuple(f"127.0.9.{i}" for i in range(1, 51)), 8000, pages_per_host=200)
    return [site.respond(site.hosts[i % 50], f"/page/{1 + i % 200}").body for i in range(count)]


def per_page(work, items) -> float:
    start = time.process_time()
    for item in items:
        work(item)
    return 1000 * (time.process_time() - start) / len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    args = parser.parse_args()
    conf = load_config()
    bodies = pages(args.pages)
    texts = [parse_page("http://x/", b, "text/html", conf).text for b in bodies]
    whole = per_page(lambda b: parse_page("http://x/", b, "text/html", conf), bodies)
    fingerprint = per_page(simhash64, texts)
    reference = per_page(simhash64_reference, texts)
    sha = per_page(content_hash, bodies)
    parsing = whole - fingerprint - sha
    size = sum(map(len, bodies)) // len(bodies)
    print(f"{len(bodies)} pages, {size} bytes on average")
    print(f"parse (lxml, links, text)     {parsing:6.3f} ms/page")
    print(f"simhash, vectorised           {fingerprint:6.3f} ms/page")
    print(f"simhash package, same features {reference:5.3f} ms/page")
    print(f"sha-256                       {sha:6.3f} ms/page")
    print(f"ratio fingerprint / parse: {fingerprint / parsing:.2f}")
    print(f"ratio vectorised / package: {fingerprint / reference:.2f}")


if __name__ == "__main__":
    main()
