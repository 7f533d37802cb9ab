"""Write docs/configuration.md, the configuration reference, from conf/trawl-default.toml.

The defaults file is the one place each key is documented (its comment, default and
unit); this script only lays it out for reading. ``--check`` exits 1 when the document
is not what the defaults file makes (the test suite runs it so).

Usage: ``.venv/bin/python scripts/config_reference.py [--check]``
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULTS = ROOT / "conf" / "trawl-default.toml"
DOCUMENT = ROOT / "docs" / "configuration.md"
SECTION = re.compile(r"^# -{10,} (?P<name>.+)$")
KEY = re.compile(r'^"(?P<key>[^"]+)"\s*=')

HEAD = """# Configuration reference

Generated from `conf/trawl-default.toml` by `scripts/config_reference.py` (the test
suite checks it is current): edit the defaults file, then run the script. Layers:
defaults < `--conf-file FILE` (TOML, same keys) < `--conf KEY=VALUE`; an unknown key is
an error; keys starting with `spark.` go to the SparkSession unchanged. Names and units
are Apache Nutch's where the meaning is the same.
"""


def entries(text: str) -> list[tuple[str, str, str]]:
    """(section, key, comment) of every key, in the file's order."""
    found, section, comment = [], "", []
    for line in text.splitlines():
        if match := SECTION.match(line):
            section, comment = match["name"], []
        elif line.startswith("#"):
            comment.append(line[1:].strip())
        elif match := KEY.match(line):
            found.append((section, match["key"], " ".join(comment)))
            comment = []
        elif not line.strip():
            comment = []
    return found


def shown(value) -> str:
    """A default as TOML would spell it."""
    return json.dumps(value, ensure_ascii=False)


def document() -> str:
    """The reference's Markdown."""
    text = DEFAULTS.read_text(encoding="utf-8")
    values = tomllib.loads(text)
    parts, section = [HEAD], None
    for where, key, comment in entries(text):
        if where != section:
            section = where
            parts.append(f"\n## {section}\n")
        if not comment:
            raise SystemExit(f"{DEFAULTS}: key {key} has no comment saying what it is")
        parts.append(f"\n### `{key}`\n\nDefault `{shown(values[key])}`. {comment}\n")
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Write the document, or with ``--check`` compare it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if it is not current")
    args = parser.parse_args(argv)
    wanted = document()
    if args.check:
        current = DOCUMENT.read_text(encoding="utf-8") if DOCUMENT.exists() else ""
        if current != wanted:
            print(f"{DOCUMENT} is not current: run scripts/config_reference.py", file=sys.stderr)
            return 1
        return 0
    DOCUMENT.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
