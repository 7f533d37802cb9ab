"""inject in the driver, for a seed file and a crawldb small enough (``db.driver.urls``).

inject by Spark reads the seed file as an RDD, counts its errors, builds the seeds' rows
and merges or writes them: ten-odd Spark jobs before a crawl's first request, most of
its start after the JVM's. Here the same lines go through the same functions
(``lib.url.seeds.parse_seed_line``, ``engine.seeds``' rows, ``crawldb.merge.merge_inject``)
in the driver, and the crawldb's first version, or the files holding a re-injected URL,
are written by the driver (``engine.driver_rewrite``). tests/test_driver_rounds.py
checks that both ways inject the same rows.
"""

from __future__ import annotations

import os
import re

from crawldb.merge import merge_inject
from engine import driver_update
from engine.delta_files import is_delta_table
from engine.driver_rewrite import CrawldbFiles, create_crawldb
from engine.driver_tables import rows_by_url
from engine.layout import DataDir
from engine.seeds import seed_rows
from lib.clock import now_ms
from lib.url.filter import UrlFilter
from lib.url.seeds import Seed, SeedError, parse_seed_line

# The bytes of a seed line the driver expects at most, on average, so that a seed file
# of up to db.driver.urls lines is injected in the driver. Unit: bytes.
LINE_BYTES = 256
LINE_END = re.compile(r"\r\n|\r|\n")  # as Hadoop's line reader ends lines


def in_driver(conf: dict, data: DataDir, seeds_path: str) -> bool:
    """Whether the seeds are injected in the driver: a local seed file of up to
    ``db.driver.urls`` lines' worth of bytes, and no crawldb yet or one the driver
    updates (``engine.driver_update.crawldb_in_driver``)."""
    limit = conf["db.driver.urls"]
    remote = "://" in str(seeds_path) and not str(seeds_path).startswith("file:")
    if limit <= 0 or remote:
        return False
    path = str(seeds_path).removeprefix("file://")
    if not os.path.isfile(path) or os.path.getsize(path) > limit * LINE_BYTES:
        return False
    return not is_delta_table(data.crawldb) or driver_update.crawldb_in_driver(conf, data)


def read_seeds(conf: dict, seeds_path: str) -> tuple[list[Seed], list[SeedError]]:
    """The seed file's seeds and its malformed lines, in file order."""
    with open(str(seeds_path).removeprefix("file://"), "rb") as file:
        text = file.read().decode("utf-8", errors="replace")
    lines = LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # the end of the last line
    url_filter = UrlFilter(conf)
    parsed = [parse_seed_line(number, line, url_filter) for number, line in enumerate(lines, 1)]
    seeds = [item for item in parsed if isinstance(item, Seed)]
    return seeds, [item for item in parsed if isinstance(item, SeedError)]


def inject_in_driver(spark, conf: dict, data: DataDir, seeds: list[Seed], message: str) -> int:
    """Merge the seeds into the crawldb in one commit labelled ``message``, as
    ``engine.seeds.merge_seeds`` does; returns how many distinct URLs were given."""
    rows = {}
    for row in seed_rows(conf, now_ms(), seeds):
        rows.setdefault(row["url"], row)  # the first line of a URL given twice
    if not is_delta_table(data.crawldb):
        create_crawldb(spark, data, list(rows.values()), message)
        return len(rows)
    files = CrawldbFiles(data)
    known = rows_by_url(files.rows, rows)
    changed = []
    for url, seed in rows.items():
        old = known.get(url)
        merged = merge_inject(old, seed, conf["db.injector.update"])
        if merged != old:
            changed.append(merged)
    if changed:
        files.rewrite(spark, changed, message)
    return len(rows)
