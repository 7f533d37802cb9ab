"""``submit.sh urlcheck``: URLs on stdin, what the crawl makes of each on stdout -- its
normalized form and the filters' decision, the crawl's own (``lib.url.filter.clean``),
for the WHATWG test URLs and the URL tests' cases; with --data, the crawldb's status."""

import json
import os
import subprocess
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from lib.config import load_config
from lib.url.filter import UrlFilter, clean

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    "HTTP://ExAmple.COM:80/a/./b/../c",
    "http://example.com/%7euser/%e2%82%ac",
    "http://bücher.de/",
    "mailto:x@example.com",
    "javascript:void(0)",
    "http://a.com/logo.PNG",
    "http://a.com/" + "x" * 3000,
    "http://a.com/a/a/a/a/a/a/a/a/",
    "not a url",
    "http://[::1",
]


def urlcheck(lines: list[str], *args: str) -> list[list[str]]:
    done = subprocess.run(
        [str(ROOT / "submit.sh"), "urlcheck", *args],
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
        check=True,
    )
    return [line.split("\t") for line in done.stdout.split("\n")[:-1]]


def whatwg_inputs() -> list[str]:
    cases = json.loads((ROOT / "tests" / "data" / "urltestdata.json").read_text())
    inputs = [c["input"] for c in cases if isinstance(c, dict) and c.get("base") is None]
    return [u for u in inputs if u.strip() and not any(ch in u for ch in "\t\r\n\x0b\x0c")]


def test_urlcheck_normalizes_and_refuses_as_the_crawl_does():
    inputs = CASES + whatwg_inputs()
    assert len(inputs) > 50
    url_filter = UrlFilter(load_config())
    printed = urlcheck(inputs)
    assert [row[0] for row in printed] == inputs
    for given, normalized, decision in printed:
        key, reason = clean(given.strip(), url_filter)
        if key is not None:
            assert (normalized, decision) == (key, "accepted"), given
        else:
            assert decision == reason, given
            assert (normalized == "") == (reason == "invalid"), given
    decisions = {row[0]: row[2] for row in printed}
    assert decisions["mailto:x@example.com"] == "scheme"
    assert decisions["http://a.com/logo.PNG"] == "suffix"
    assert decisions["not a url"] == "invalid"


def test_a_site_file_s_filters_and_the_crawldb_s_statuses(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text('"urlfilter.hosts.allow" = ["a.test"]\n')
    crawldb = pa.table({"url": ["http://a.test/known"], "status": ["fetched"]})
    write_deltalake(str(tmp_path / "data" / "crawldb"), crawldb)
    urls = ["http://A.test/known", "http://a.test/new", "http://b.test/"]
    printed = urlcheck(urls, "--conf-file", str(site), "--data", str(tmp_path / "data"))
    assert printed == [
        ["http://A.test/known", "http://a.test/known", "accepted", "known", "fetched"],
        ["http://a.test/new", "http://a.test/new", "accepted", "unknown", ""],
        ["http://b.test/", "http://b.test/", "host_denied", "unknown", ""],
    ]
