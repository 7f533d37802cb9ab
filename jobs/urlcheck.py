"""urlcheck: what the crawl makes of URLs (Nutch's URLNormalizerChecker and
URLFilterChecker in one), without Spark.

Usage: ``submit.sh urlcheck [--data DIR] [--conf KEY=VALUE ...] [--conf-file FILE]``,
URLs on stdin, one a line. For each, one tab-separated line on stdout: the URL as
given, its normalized form (empty when it cannot be normalized), and ``accepted`` or
the reason a filter refuses it (the built-in filters' names, or what a
``urlfilter.plugins`` filter says); with ``--data``, also ``known`` or ``unknown`` (is
the normalized URL in the crawldb) and its status there. The rules are the crawl's own
(``lib.url.filter.clean``), with the configuration given.
"""

from __future__ import annotations

import argparse
import sys

from engine.runtime.reader import exit_now
from lib import plugins
from lib.config import ConfigError, load_config
from lib.url.filter import UrlFilter


def build_parser() -> argparse.ArgumentParser:
    """Command line of the tool."""
    parser = argparse.ArgumentParser(prog="submit.sh urlcheck", description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="data directory: also say whether the crawldb has it")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--conf-file", action="append", default=[], metavar="FILE")
    return parser


def decisions(urls: list[str], url_filter: UrlFilter) -> list[tuple[str, str, str]]:
    """``(given, normalized or "", "accepted" or the reason)`` of each URL."""
    found = []
    for given in urls:
        # clean()'s two steps, so that a refused URL still shows its normalized form.
        normalized = url_filter.normalizer.key(given.strip())
        if normalized is None:
            found.append((given, "", "invalid"))
            continue
        found.append((given, normalized, url_filter.reject(normalized) or "accepted"))
    return found


def crawldb_statuses(data: str, urls: list[str]) -> dict[str, str]:
    """url -> status of the ``urls`` the data directory's crawldb holds (delta-rs)."""
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    from engine.runtime.layout import DataDir

    crawldb = DeltaTable(DataDir.at(data).crawldb).to_pyarrow_dataset()
    # delta-rs may read strings as string_view: the column cast to compare it with a str.
    wanted = pc.field("url").cast("string").isin(urls)
    rows = crawldb.to_table(columns=["url", "status"], filter=wanted)
    return dict(zip(rows.column("url").to_pylist(), rows.column("status").to_pylist(), strict=True))


def main(argv: list[str] | None = None) -> int:
    """Read stdin, print the decisions; 2 on a configuration or data directory mistake."""
    args = build_parser().parse_args(argv)
    try:
        conf = load_config(args.conf_file, args.conf)
        plugins.check(conf)
    except ConfigError as exc:
        print(f"urlcheck: {exc}", file=sys.stderr)
        return 2
    urls = [line.rstrip("\r\n") for line in sys.stdin if line.strip()]
    found = decisions(urls, UrlFilter(conf))
    known: dict[str, str] | None = None
    if args.data is not None:
        try:
            known = crawldb_statuses(args.data, [normalized for _, normalized, _ in found])
        except Exception as exc:  # noqa: BLE001 - no crawldb there: one line, exit 2
            print(f"urlcheck: {args.data} has no readable crawldb ({exc})", file=sys.stderr)
            return 2
    for given, normalized, decision in found:
        fields = [given, normalized, decision]
        if known is not None:
            status = known.get(normalized)
            fields += ["unknown", ""] if status is None else ["known", status]
        print("\t".join(fields))
    return 0


if __name__ == "__main__":
    exit_now(main())
