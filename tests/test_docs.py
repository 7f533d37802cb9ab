"""The docs say what the code does: every claim of a key's default in README.md and
docs/ is the defaults file's value, the crawldb's column table is its schema, the
exit-code table is the codes the jobs and submit.sh use, the quick start and the exit
codes come first, and no text speaks of issue numbers as if they were versions."""

import re
import tomllib

import pytest
from conftest import ROOT

from crawldb.schema import CRAWLDB, HOSTDB, LINKDB
from engine.runtime import cli

DEFAULTS = tomllib.loads((ROOT / "conf" / "trawl-default.toml").read_text())
# Generated from the defaults file (test_config_reference), or figures of runs.
NOT_CLAIMS = ("configuration.md", "benchmarks.md")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "CHANGELOG.md"]
KEY = r"`([a-z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)+)`"
# The ways the docs state a default: "`key` (default 168", "`key` set (default -1",
# "`key` (1.5)", "`key` (6 s)", "`key` (86400 s: a day)", "`key` = 50", "`key`, on by default",
# "`key` (empty, the default: ...".
CLAIMS = [
    re.compile(KEY + r"(?: [a-z]+)?,? \([Dd]efault:? `?([^`,;:)]+?)`?(?:[,;:)]| [a-z(])"),
    re.compile(KEY + r" \((-?[0-9][0-9.]*|true|false)(?: ?[a-z%]+)?[:)]"),
    re.compile(KEY + r" = `?([^`\s,;:)]+)`?"),
    re.compile(KEY + r"[^`.;]{0,30}?\b(on|off) by default"),
    re.compile(KEY + r" \((empty), the default"),
]
OFF = (False, -1, 0, "", [])


def claims() -> list[tuple[str, str, str]]:
    """``(doc, key, value said)`` of every default the docs state."""
    found = []
    for doc in DOCS:
        if doc.name in NOT_CLAIMS:
            continue
        text = " ".join(doc.read_text().split())
        for pattern in CLAIMS:
            found += [(doc.name, m.group(1), m.group(2)) for m in pattern.finditer(text)]
    return found


def says(value: str, default) -> bool:
    """Whether the text ``value`` states ``default``."""
    if value in ("on", "off"):
        return default is True if value == "on" else default in OFF
    if value == "empty":
        return default in ("", [])
    if isinstance(default, bool):
        return value == str(default).lower()
    if isinstance(default, int | float):
        return float(value) == float(default)
    return value == str(default)


def test_every_default_the_docs_state_is_the_defaults_file_s():
    found = claims()
    assert len(found) >= 12, found  # the check reads the docs' claims, not nothing
    wrong = [
        (doc, key, value, DEFAULTS.get(key, "no such key"))
        for doc, key, value in found
        if key not in DEFAULTS or not says(value, DEFAULTS[key])
    ]
    assert wrong == []


def test_a_wrong_default_would_be_found():
    assert not says("off", True) and not says("24", 168) and not says("1m", "2m")
    assert says("off", -1) and says("168", 168) and says("1.5", 1.5) and says("on", True)


@pytest.mark.parametrize("table", [CRAWLDB, LINKDB, HOSTDB], ids=lambda t: t.name)
def test_each_column_table_is_the_schema(table):
    text = (ROOT / "docs" / "data.md").read_text()
    section = text[text.index(f"## {table.name} columns") :].split("\n## ")[0]
    columns = re.findall(r"^\| `([a-z_]+)` \|", section, re.M)
    assert columns == table.names


def test_the_exit_code_table_is_the_codes_in_use():
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Exit codes") :].split("\n## ")[0]
    documented = [int(code) for code in re.findall(r"^\| (\d+) \|", table, re.M)]
    setup = int(re.search(r"^EXIT_SETUP=(\d+)$", (ROOT / "submit.sh").read_text(), re.M)[1])
    used = {0, 1, cli.EXIT_USAGE, cli.EXIT_LOCKED, cli.EXIT_FAILED, cli.EXIT_INTERRUPTED, setup}
    assert sorted(documented) == sorted(used)


@pytest.mark.parametrize("heading", ["## Crawl your own sites", "## Exit codes"])
def test_the_quick_start_and_exit_codes_come_first(heading):
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index(heading)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    assert end <= 120, f"{heading} ends on line {end}"


def test_no_issue_numbers_in_the_docs():
    for doc in DOCS:
        assert not re.search(r"\b[Ii]ssues? \d+", doc.read_text()), doc.name


def test_the_quick_start_s_site_file_loads(tmp_path):
    from lib.config import load_config
    from lib.fetching.agent import unnamed_keys

    readme = (ROOT / "README.md").read_text()
    lines = readme[readme.index("## Crawl your own sites") :].splitlines()
    toml = [line.strip() for line in lines if line.lstrip().startswith('"')]
    assert len(toml) >= 3, toml
    site = tmp_path / "site.toml"
    site.write_text("\n".join(toml) + "\n")
    conf = load_config([site])
    assert unnamed_keys(conf) == []  # the agent named, as the crawl requires
