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

from engine.runtime.reader import exit_now, open_table, reader_parser
from lib.url.filter import UrlFilter


def build_parser() -> argparse.ArgumentParser:
    """Command line of the tool."""
    parser = reader_parser("readlinkdb", __doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--url", help="the inlinks of one URL")
    action.add_argument("--dump", metavar="OUT", help="write every inlink as JSON lines to OUT")
    parser.add_argument("--json", action="store_true", help="--url as JSON lines")
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

    args = build_parser().parse_args(argv)
    opened = open_table("readlinkdb", args, "linkdb")
    if opened is None:
        return 2
    conf, data = opened
    linkdb = DeltaTable(data.linkdb).to_pyarrow_dataset()
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
    exit_now(main())
