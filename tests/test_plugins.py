"""Plugins a user adds without forking Trawl: a package kept under tests/ (its own
pyproject.toml, installed into the environment here) gives a URL filter, a parser for a
made-up MIME type the test web serves, and an exporter, all named in the settings with
a key of its own; the shipped PDF and feed parsers and the JSON Lines exporter run
beside them. The request log, the parse table and the exported files prove each ran."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TEST_SERVER_DELAY
from deltalake import DeltaTable
from weblog import entries_for

from jobs import crawl
from lib.config import ConfigError, load_config
from lib.plugins import PluginError, check

PACKAGE = Path(__file__).parent / "plugin_pkg"
AGENT_URL = "https://trawl.invalid/test-plugins"


@pytest.fixture(scope="module")
def installed():
    """The plugin package, installed into this environment (as a user would)."""
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
    command += [str(PACKAGE)]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    importlib.invalidate_caches()
    yield


def plugin_conf(tmp_path: Path) -> list[str]:
    settings = [
        f"fetcher.server.delay={TEST_SERVER_DELAY}",
        "fetcher.allow.private.networks=true",
        f"http.agent.url={AGENT_URL}",
        "fetcher.soft404.probe=false",
        "db.max.depth=1",
        "urlfilter.plugins=trawl_test_plugin:RefusePath",
        "testplugin.refuse=/page/5",
        "parse.plugins=application/x-trawl-thing=trawl_test_plugin:ThingParser",
        "export.plugins=trawl_test_plugin:Recorder,lib.export.jsonl:JsonLines",
        f"testplugin.export.path={tmp_path / 'recorded'}",
        f"export.jsonl.dir={tmp_path / 'jsonl'}",
    ]
    return [part for item in settings for part in ("--conf", item)]


@pytest.mark.spark
@pytest.mark.web
def test_a_crawl_runs_a_plugin_packages_filter_parser_and_exporter(installed, spark, web, tmp_path):
    base = web.site.base(0)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(
        "".join(
            f"{base}{path}\n" for path in ("/doc.pdf", "/feed.xml", "/thing.trawl", "/blob.xyz")
        )
    )
    data = tmp_path / "data"
    args = ["--seeds", str(seeds), "--rounds", "2", "--data", str(data), *plugin_conf(tmp_path)]
    assert crawl.main(args) == 0
    asked = {e["path"] for e in entries_for(web, AGENT_URL) if e["host"] == web.site.hosts[0]}
    # Links of the PDF (/page/3), the feed (/page/4) and the thing (/page/6) were followed;
    # the feed's /page/5 was refused by the package's URL filter.
    assert {"/page/3", "/page/4", "/page/6"} <= asked and "/page/5" not in asked
    parsed = {r["url"]: r for r in segment_rows(data, "parse")}
    thing = parsed[f"{base}/thing.trawl"]
    assert thing["parse_status"] == "success" and thing["title"] == f"A thing of {base}"
    assert dict(thing["metadata"])["parsed_by"] == "trawl_test_plugin"
    assert parsed[f"{base}/blob.xyz"]["parse_status"] == "not_parsed"
    assert parsed[f"{base}/blob.xyz"]["reason"] == "application/x-trawl-unknown"
    assert "Portable text" in parsed[f"{base}/doc.pdf"]["text"]
    assert dict(parsed[f"{base}/feed.xml"]["metadata"])["feed_entries"] == "2"
    entries = {
        link["url"]: dict(link["metadata"]) for link in parsed[f"{base}/feed.xml"]["outlinks"]
    }
    assert entries == {f"{base}/page/4": {"updated": "2026-12-04T10:00:00Z"}}  # its date kept
    exported = [
        json.loads(line)
        for f in (tmp_path / "jsonl").glob("*.jsonl")
        for line in f.read_text().splitlines()
    ]
    pages = [
        r
        for r in segment_rows(data, "fetch")
        if r["fetch_status"] == "success" and r["origin"] not in ("robots", "sitemap", "probe")
    ]
    assert sorted(d["url"] for d in exported) == sorted(r["url"] for r in pages)
    recorded = [
        json.loads(line)
        for f in (tmp_path / "recorded").glob("*.jsonl")
        for line in f.read_text().splitlines()
    ]
    assert {d["url"] for d in recorded} == {d["url"] for d in exported}
    assert not list((tmp_path / "jsonl").glob("*.inprogress"))
    rejected = json.loads(
        (data / "segments").glob("*").__next__().joinpath("_updated.done").read_text()
    )
    assert "rejected" in rejected


@pytest.mark.spark
def test_a_plugin_filter_keeps_crawldb_urls_out_of_the_fetch_list(installed, spark):
    """At generate (generate.filter) as at inject: a URL already in the crawldb that the
    package's filter now refuses is not generated; its row stays."""
    from test_generate import NOW, crawldb_rows

    from crawldb.schema import CRAWLDB
    from engine.frames import rows_to_df
    from jobs.generate import select_due

    crawldb = rows_to_df(spark, spark.sparkContext.parallelize(crawldb_rows()), CRAWLDB)
    settings = ["urlfilter.plugins=trawl_test_plugin:RefusePath", "testplugin.refuse=h3.test/"]
    chosen = {r["url"] for r in select_due(crawldb, load_config(overrides=settings), NOW).collect()}
    assert chosen and not any("h3.test" in url for url in chosen)
    everything = {r["url"] for r in select_due(crawldb, load_config(), NOW).collect()}
    assert everything - chosen == {f"http://h3.test/{page}" for page in range(5)}


def segment_rows(data: Path, table: str) -> list[dict]:
    """Every row of one table of every segment, read with delta-rs."""
    rows = []
    for folder in sorted((data / "segments").iterdir()):
        rows += DeltaTable(str(folder / table)).to_pyarrow_table().to_pylist()
    return rows


def test_a_wrong_plugin_path_is_named_with_its_key():
    with pytest.raises(
        ConfigError, match="urlfilter.plugins: plugin 'nowhere.at.all:Filter' does not import"
    ):
        load_config(overrides=["urlfilter.plugins=nowhere.at.all:Filter"])
    conf = load_config(overrides=["parse.filters=lib.plugins:PLUGIN_KEYS"])
    with pytest.raises(PluginError, match="parse.filters: plugin 'lib.plugins:PLUGIN_KEYS' is"):
        check(conf)
    conf = load_config(overrides=["parse.filters=lib.content.pdf:PdfParser"])
    with pytest.raises(PluginError, match="parse.filters: .*PdfParser' has no method filter"):
        check(conf)


def test_a_wrong_plugin_path_exits_2_from_the_command_line(tmp_path, capsys):
    args = ["--data", str(tmp_path), "--rounds", "1", "--conf", "export.plugins=lib.export:Nothing"]
    assert crawl.main(args) == 2
    err = capsys.readouterr().err
    assert "export.plugins: plugin 'lib.export:Nothing': lib.export has no Nothing" in err
