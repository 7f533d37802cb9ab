"""Parse benchmark (issue 5): parse and fingerprint CPU time per page, side by side.

Two corpora, built without network: the local test web's article pages (~4.4 KB, 800
words) and 20 KB article pages (~2,800 words in paragraphs, a navigation bar of 40 links,
a script and a style block), the page size the issue measured on. For each, in one run:
lxml parse + links + text (``parse_pages`` minus its fingerprints), Trawl's fingerprints
(SimHash and MinHash sketch, ``lib.content.fingerprint_kernel``) over batches of 256 pages
(as the parse job runs it) and one page at a time, the simhash package (SimHash alone)
on the same features, and SHA-256. Prints ms/page and the ratios.
Usage: ``.venv/bin/python tests/benchmarks/bench_parse.py [--pages 10000]``.
"""

from __future__ import annotations

import argparse
import random
import time

from lib.config import load_config
from lib.content.fingerprint import content_hash, simhash64, simhash64_many, simhash64_reference
from lib.content.parse import parse_pages
from testweb.site import Site

BATCH = 256  # pages per parse batch, as jobs/parse.py batches them


def test_web_pages(count: int) -> list[bytes]:
    site = Site(tuple(f"127.0.9.{i}" for i in range(1, 51)), 8000, pages_per_host=200)
    return [site.respond(site.hosts[i % 50], f"/page/{1 + i % 200}").body for i in range(count)]


def article_pages(count: int, words: int = 2800) -> list[bytes]:
    """20 KB article pages: varied vocabulary, paragraphs, chrome around the text."""
    rng = random.Random(5)
    vocabulary = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(5000)
    ]
    nav = "".join(
        f'<li><a href="/section/{i}" class="nav-link">Section {i}</a></li>' for i in range(40)
    )
    pages = []
    for number in range(count):
        text = [rng.choice(vocabulary) for _ in range(words)]
        paragraphs = "".join(
            f'<p>{" ".join(text[i : i + 70])}. <a href="/article/{number}/{i}">more</a></p>'
            for i in range(0, words, 70)
        )
        pages.append(
            (
                f"<!doctype html><html lang=en><head><title>Article {number}</title>"
                "<style>body{font:14px sans-serif}.nav-link{color:#333}</style>"
                "<script>window.dataLayer=[];function track(){return 1}</script></head>"
                f"<body><header><nav><ul>{nav}</ul></nav></header>"
                f"<main><article><h1>Article {number}</h1>{paragraphs}</article></main>"
                "<footer><a href=/about>About</a> <a href=/contact>Contact</a></footer>"
                "</body></html>"
            ).encode()
        )
    return pages


def cpu_ms_per_page(work, items, per_call: int = 1) -> float:
    """CPU milliseconds per item of ``work`` over ``items`` in calls of ``per_call``."""
    start = time.process_time()
    for offset in range(0, len(items), per_call):
        work(items[offset : offset + per_call] if per_call > 1 else items[offset])
    return 1000 * (time.process_time() - start) / len(items)


def measure(name: str, bodies: list[bytes], conf) -> None:
    pages = [("http://x/", body, "text/html", None) for body in bodies]
    texts = [result.text for result in parse_pages(pages, conf)]
    whole = cpu_ms_per_page(lambda batch: parse_pages(batch, conf), pages, BATCH)
    batched = cpu_ms_per_page(simhash64_many, texts, BATCH)
    single = cpu_ms_per_page(simhash64, texts)
    reference = cpu_ms_per_page(simhash64_reference, texts)
    sha = cpu_ms_per_page(content_hash, bodies)
    parsing = whole - batched - sha
    size = sum(map(len, bodies)) // len(bodies)
    words = sum(len(text.split()) for text in texts) // len(texts)
    print(f"== {name}: {len(bodies)} pages, {size} bytes, {words} words on average")
    print(f"parse (lxml, links, text)          {parsing:6.3f} ms/page")
    print(f"SimHash + MinHash, compiled, {BATCH} a batch  {batched:6.3f} ms/page")
    print(f"SimHash + MinHash, compiled, one page  {single:6.3f} ms/page")
    print(f"simhash package (SimHash alone)        {reference:6.3f} ms/page")
    print(f"sha-256                            {sha:6.3f} ms/page")
    print(f"ratio fingerprint (batched) / parse: {batched / parsing:.2f}")
    print(f"ratio fingerprint (one page) / parse: {single / parsing:.2f}")
    print(f"ratio batched / package: {batched / reference:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    args = parser.parse_args()
    conf = load_config()
    measure("test web pages", test_web_pages(args.pages), conf)
    measure("20 KB article pages", article_pages(args.pages), conf)


if __name__ == "__main__":
    main()
