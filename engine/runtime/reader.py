"""What the tools that read a data directory's tables without Spark share (readlinkdb,
readhostdb): their common options, and the table opened or one line saying why not."""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

from engine.runtime.layout import DataDir
from lib.config import Config, ConfigError, load_config


def reader_parser(tool: str, description: str) -> argparse.ArgumentParser:
    """A tool's parser with ``--data`` (required), ``--conf`` and ``--conf-file``."""
    parser = argparse.ArgumentParser(prog=f"submit.sh {tool}", description=description)
    parser.add_argument("--data", required=True, help="data directory")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--conf-file", action="append", default=[], metavar="FILE")
    return parser


def open_table(tool: str, args, table: str) -> tuple[Config, DataDir] | None:
    """The settings and data directory of ``args`` when the directory holds the Delta
    table ``table`` (updatedb writes it while ``TABLE.enabled``); else None, said on
    stderr (a key or file that cannot be read, or no such table)."""
    from deltalake import DeltaTable

    try:
        conf = load_config(args.conf_file, args.conf)
    except ConfigError as exc:
        print(f"{tool}: {exc}", file=sys.stderr)
        return None
    data = DataDir.at(args.data, conf)
    if not DeltaTable.is_deltatable(data.path(table)):
        print(
            f"{tool}: {args.data} has no {table} (updatedb writes it: {table}.enabled)",
            file=sys.stderr,
        )
        return None
    return conf, data


def exit_now(code: int) -> NoReturn:
    """End the tool with ``code`` once its output is flushed, without the interpreter's
    teardown: delta-rs's threads can still be alive then and abort the process with
    SIGABRT after its work is done (delta-io/delta-rs#2184)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
