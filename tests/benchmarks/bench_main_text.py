"""Main-text extraction, side by side: resiliparse's and trafilatura's main content,
and the visible text Trawl keeps in ``text``, against the known main text of article
pages on two webs: the news web of ``testweb.news`` (two template families) and the
article pages of ``testweb.articles`` (table layout, blog with comments, docs with a
sidebar, magazine with boxes inside the article).

Per page: precision and recall of the extracted words against the main text's (as bags
of words), their F1, and the milliseconds the extraction took. Prints, per web and
extractor (and per template of the articles web), the mean F1, precision and recall,
the share of pages at F1 >= 0.9, and the mean milliseconds per page. The parse filter
``lib.content.main_text:MainText`` uses the extractor ``parse.main_text.extractor``
names (the default chosen by this table).

Run: ``.venv/bin/python tests/benchmarks/bench_main_text.py [--pages 200]``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import lxml.html  # noqa: E402

from lib.content.main_text import EXTRACTORS  # noqa: E402
from lib.content.parse import visible_text  # noqa: E402
from testweb import articles  # noqa: E402
from testweb.news import NewsWeb  # noqa: E402

_WORD = re.compile(r"\w+")


def news_pages(count: int) -> list[tuple[str, bytes, str]]:
    """``(url, html, main text)`` of ``count`` news articles over eight hosts."""
    bases = tuple(f"http://news{h}.test" for h in range(8))
    web = NewsWeb(bases, articles=count)
    pages = []
    for k in range(count):
        host, number = k % len(bases), k // len(bases) + 1
        article = web.article(host, number)
        truth = " ".join([article.title, *article.sentences])
        pages.append((f"{bases[host]}/news/{number}", web.page(host, f"/news/{number}"), truth))
    return pages


def article_pages(count: int) -> list[tuple[str, bytes, str]]:
    """``(url, html, main text)`` of ``count`` pages of ``testweb.articles``."""
    pages = []
    for k in range(count):
        template = articles.TEMPLATES[k % len(articles.TEMPLATES)]
        html, truth = articles.page(template, k)
        pages.append((f"http://{template}.test/{k}", html.encode(), truth))
    return pages


def trawl_text(url: str, html: bytes) -> str:
    """The visible text Trawl's HTML parser keeps (the ``text`` column)."""
    return visible_text(lxml.html.fromstring(html))


def scores(extracted: str, truth: str) -> tuple[float, float, float]:
    """Precision, recall and F1 of the extracted words against the main text's."""
    got, want = Counter(_WORD.findall(extracted.lower())), Counter(_WORD.findall(truth.lower()))
    common = sum((got & want).values())
    precision = common / sum(got.values()) if got else 0.0
    recall = common / sum(want.values()) if want else 0.0
    f1 = 2 * precision * recall / (precision + recall) if common else 0.0
    return precision, recall, f1


def measure(extract, pages) -> dict[str, float]:
    """The figures of one extractor over ``pages``."""
    rows, seconds = [], 0.0
    for url, html, truth in pages:
        start = time.perf_counter()
        text = extract(url, html)
        seconds += time.perf_counter() - start
        rows.append(scores(text, truth))
    precision, recall, f1 = (statistics.fmean(column) for column in zip(*rows, strict=True))
    return {
        "f1": f1,
        "precision": precision,
        "recall": recall,
        "good": sum(row[2] >= 0.9 for row in rows) / len(rows),
        "ms": 1000 * seconds / len(rows),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200, help="pages per web")
    args = parser.parse_args(argv)
    news, pages = news_pages(args.pages), article_pages(args.pages)
    webs = {"news": news, "articles": pages}
    # each template of the articles web apart: where an extractor fails
    for template in articles.TEMPLATES:
        webs[f"articles: {template}"] = [p for p in pages if f"//{template}.test/" in p[0]]
    extractors = {name: extractor for name, extractor in EXTRACTORS.items()}
    extractors["visible text"] = trawl_text
    print(f"pages per web: {args.pages}")
    print("| web | extractor | mean F1 | precision | recall | pages F1 >= 0.9 | ms / page |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for web, pages in webs.items():
        for name, extract in extractors.items():
            figures = measure(extract, pages)
            print(
                f"| {web} | {name} | {figures['f1']:.3f} | {figures['precision']:.3f} "
                f"| {figures['recall']:.3f} | {figures['good']:.0%} | {figures['ms']:.1f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
