"""readhostdb: read the hostdb (Nutch's readhostdb), without Spark.

Usage: ``submit.sh readhostdb --data DIR [--host H] [--json]``. Without ``--host``:
every host, most URLs first, one a line: its URLs, fetched, unfetched, gone, redirect
and duplicate URLs, its pages' fetches that succeeded and failed, its answers' mean
time, its robots.txt status and Crawl-delay, the pause kept, and what the last round
held back. ``--host H``: that host's whole row, one ``column<TAB>value`` a line; exit 1
when the hostdb has no such host. ``--json``: the rows as JSON (one object a line; with
``--host``, the one object).
"""

from __future__ import annotations

import argparse
import json
import sys

from engine.runtime.reader import exit_now, open_table, reader_parser

# The one-line summary's columns: (header, how a row gives it).
SUMMARY = (
    ("urls", lambda r: r["urls"]),
    ("fetched", lambda r: r["urls_fetched"] + r["urls_notmodified"]),
    ("unfetched", lambda r: r["urls_unfetched"]),
    ("gone", lambda r: r["urls_gone"]),
    ("redirect", lambda r: r["urls_redir_temp"] + r["urls_redir_perm"]),
    ("duplicate", lambda r: r["urls_duplicate"]),
    ("ok", lambda r: r["fetches_success"] + r["fetches_not_modified"]),
    ("failed", lambda r: r["fetches_not_found"] + r["fetches_retry"]),
    ("mean_ms", lambda r: "-" if r["mean_response_ms"] is None else round(r["mean_response_ms"])),
    ("robots", lambda r: "-" if r["robots_status"] is None else r["robots_status"]),
    ("delay_s", lambda r: "-" if r["delay"] is None else r["delay"]),
    ("held_back", lambda r: r["held_back"] or "-"),
)


def build_parser() -> argparse.ArgumentParser:
    """Command line of the tool."""
    parser = reader_parser("readhostdb", __doc__.splitlines()[0])
    parser.add_argument("--host", help="one host's row")
    parser.add_argument("--json", action="store_true", help="JSON instead of text")
    return parser


def host_table(path: str) -> list[dict]:
    """The hostdb's rows, times as ISO 8601 text, most URLs first (then by host)."""
    from deltalake import DeltaTable

    rows = DeltaTable(path).to_pyarrow_table().to_pylist()
    for row in rows:
        for name in ("robots_time", "last_fetch_time"):
            row[name] = row[name].isoformat() if row[name] is not None else None
    return sorted(rows, key=lambda row: (-row["urls"], row["host"]))


def print_summary(rows: list[dict]) -> None:
    """One aligned line a host, under a header line."""
    width = max([4, *(len(row["host"]) for row in rows)])
    print(f"{'host':<{width}}  " + "  ".join(f"{name:>9}" for name, _ in SUMMARY))
    for row in rows:
        figures = "  ".join(f"{value(row)!s:>9}" for _, value in SUMMARY)
        print(f"{row['host']:<{width}}  {figures}")


def main(argv: list[str] | None = None) -> int:
    """Print; 1 when ``--host`` is not in the hostdb, 2 when there is no hostdb."""
    args = build_parser().parse_args(argv)
    opened = open_table("readhostdb", args, "hostdb")
    if opened is None:
        return 2
    _, data = opened
    rows = host_table(data.hostdb)
    if args.host is not None:
        rows = [row for row in rows if row["host"] == args.host.lower()]
        if not rows:
            print(f"readhostdb: no host {args.host} in the hostdb", file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps(rows[0]))
        else:
            print("\n".join(f"{name}\t{value}" for name, value in rows[0].items()))
    elif args.json:
        print("\n".join(json.dumps(row) for row in rows))
    else:
        print_summary(rows)
    return 0


if __name__ == "__main__":
    exit_now(main())
