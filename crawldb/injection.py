"""inject's rule, written once for both executors (``engine.executors.seeds``: in the driver for a
small seed file and crawldb, by Spark's tasks for a large one): a seed line's crawldb
row, the first line of a URL given twice, and the seed merged with the row the crawldb
has (``crawldb.merge.merge_inject``: history is never lost).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from crawldb.merge import merge_inject, new_row
from lib.url.filter import UrlFilter
from lib.url.normalize import host_of
from lib.url.seeds import Seed, SeedError, parse_seed_line

Row = dict[str, Any]


def seed_rows(conf: Mapping[str, Any], stamp: int, seeds: Iterable[Seed]) -> Iterator[Row]:
    """The new crawldb rows of ``Seed``s, times at ``stamp`` (epoch ms), each with the
    ``line`` it was given on (0 for a seed of no file)."""
    normalizer = UrlFilter(conf).normalizer  # once per partition
    for seed in seeds:
        row = new_row(
            seed.url,
            host_of(seed.url),
            stamp,
            score=seed.score if seed.score is not None else conf["db.score.injected"],
            depth=0,
            fetch_interval=seed.fetch_interval or conf["db.fetch.interval.default"],
            fixed_interval=seed.fixed_interval,
            metadata=seed.metadata,
            dedup_key=normalizer.dedup(seed.url),
        )
        yield row | {"line": seed.line}


def parsed_lines(conf: Mapping[str, Any], numbered: Iterable[tuple[int, str]]):
    """The ``Seed``s and ``SeedError``s of numbered seed lines (blank and comment lines
    give neither), in order."""
    url_filter = UrlFilter(conf)  # once per partition: plugins are made here
    for number, text in numbered:
        parsed = parse_seed_line(number, text, url_filter)
        if parsed is not None:
            yield parsed


def is_seed(parsed) -> bool:
    """Whether ``parsed_lines`` gave a seed (not a ``SeedError``)."""
    return isinstance(parsed, Seed)


def is_error(parsed) -> bool:
    """Whether ``parsed_lines`` gave a ``SeedError``."""
    return isinstance(parsed, SeedError)


def earlier(first: Row, other: Row) -> Row:
    """Of two seed rows of one URL, the one given on the earlier line: it counts."""
    return other if other["line"] < first["line"] else first


def changed_row(known: Row | None, seed: Row, update: bool) -> Row | None:
    """The crawldb row a seed leaves (``seed``: a ``seed_rows`` row; ``known``: the row
    the crawldb has, or None), or None when the crawldb's is left unchanged."""
    injected = {name: value for name, value in seed.items() if name != "line"}
    merged = merge_inject(known, injected, update)
    return None if merged == known else merged
