"""readlinkdb: read the linkdb (Nutch's readlinkdb), without Spark.

Usage: ``submit.sh readlinkdb --data DIR (--url URL [--json] | --dump OUT)``. ``--url``:
the inlinks of one URL (normalized first), one a line: the linking page, its anchor
text, the first and last segments that saw the link (``--json``: one JSON object a
line); exit 1 when the linkdb has none. ``--dump OUT``: every inlink as JSON lines in
the file OUT.
"""

from __future__ import annotations

import argparse
import json
import sys

from lib.config import ConfigError, load_config
from lib.url.filter import UrlFilter


def build_parser() -> argparse.ArgumentParser:
    """Command line of the tool."""
    parser = argparse.ArgumentParser(
        prog="submit.sh readlinkdb", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--data", required=True, help="data directory")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--url", help="the inlinks of one URL")
    action.add_argument("--dump", metavar="OUT", help="write every inlink as JSON lines to OUT")
    parser.add_argument("--json", action="store_true", help="--url as JSON lines")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--conf-file", action="append", default=[], metavar="FILE")
    return parser


def _rows(batch) -> list[dict]:
    rows = batch.to_pylist()
    for row in rows:
        for name in ("first_seen", "last_seen"):
            row[name] = row[name].isoformat() if row[name] is not None else None
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print or dump; 2 when the data directory has no linkdb."""
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    from engine.runtime.layout import DataDir

    args = build_parser().parse_args(argv)
    try:
        conf = load_config(args.conf_file, args.conf)
    except ConfigError as exc:
        print(f"readlinkdb: {exc}", file=sys.stderr)
        return 2
    data = DataDir.at(args.data, conf)
    try:
        linkdb = DeltaTable(data.linkdb).to_pyarrow_dataset()
    except Exception:  # noqa: BLE001 - no table there: one line
        print(
            f"readlinkdb: {args.data} has no linkdb (updatedb writes it: linkdb.enabled)",
            file=sys.stderr,
        )
        return 2
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as out:
            for batch in linkdb.to_batches():
                out.writelines(json.dumps(row) + "\n" for row in _rows(batch))
        print(f"readlinkdb: inlinks written as JSON lines to {args.dump}")
        return 0
    url = UrlFilter(conf).normalizer.key(args.url) or args.url
    # delta-rs may read strings as string_view: the column cast to compare it with a str.
    rows = _rows(linkdb.to_table(filter=pc.field("url").cast("string") == url))
    for row in sorted(rows, key=lambda r: r["from_url"]):
        if args.json:
            print(json.dumps(row))
        else:
            print(
                f"{row['from_url']}\t{row['anchor']}\t{row['first_segment']}\t{row['last_segment']}"
            )
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
