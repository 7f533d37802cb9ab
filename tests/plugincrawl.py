"""A crawl of the test web whose URL filter, parser and exporter come from the plugin
package kept under ``tests/plugin_pkg`` (installed into the environment, as a user
would), beside the shipped PDF and feed parsers and the JSON Lines exporter; and what
proves each was used: the request log, the parse table and the exported files. Run in
local mode (test_plugins) and on the standalone cluster (test_cluster)."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

from conftest import web_conf_args
from deltalake import DeltaTable
from weblog import entries_for

from testweb.documents import ROUTES

PACKAGE = Path(__file__).parent / "plugin_pkg"


def install_package() -> None:
    """The plugin package, installed into this environment (the executors' too)."""
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", str(PACKAGE)]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    importlib.invalidate_caches()


def plugin_crawl_args(web, folder: Path, agent_url: str) -> list[str]:
    """``--seeds``, ``--data`` (``folder/data``) and the ``--conf`` settings of a two-round
    crawl of the documents of the web's first host, with the package's plugins."""
    base = web.site.base(0)
    seeds = folder / "seeds.txt"
    seeds.write_text("".join(f"{base}{route}\n" for route in ROUTES))
    settings = [
        "fetcher.soft404.probe=false",
        "db.max.depth=1",
        "urlfilter.plugins=trawl_test_plugin:RefusePath",
        "generate.filter=true",  # the package's filter at generate too (its tasks)
        "testplugin.refuse=/page/5",
        "parse.plugins=application/x-trawl-thing=trawl_test_plugin:ThingParser",
        "export.plugins=trawl_test_plugin:Recorder,lib.export.jsonl:JsonLines",
        f"testplugin.export.path={folder / 'recorded'}",
        f"export.jsonl.dir={folder / 'jsonl'}",
    ]
    args = ["--seeds", str(seeds), "--rounds", "2", "--data", str(folder / "data")]
    return args + web_conf_args(agent_url, *settings)


def check_plugin_crawl(web, folder: Path, agent_url: str) -> None:
    """Each plugin of ``plugin_crawl_args``'s crawl in ``folder`` was used."""
    base = web.site.base(0)
    data = folder / "data"
    asked = {e["path"] for e in entries_for(web, agent_url) if e["host"] == web.site.hosts[0]}
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
    exported = exported_lines(folder / "jsonl")
    pages = [
        r
        for r in segment_rows(data, "fetch")
        if r["fetch_status"] == "success" and r["origin"] not in ("robots", "sitemap", "probe")
    ]
    assert sorted(d["url"] for d in exported) == sorted(r["url"] for r in pages)
    recorded = exported_lines(folder / "recorded")
    assert {d["url"] for d in recorded} == {d["url"] for d in exported}
    assert not list((folder / "jsonl").glob("*.inprogress"))
    first = sorted((data / "segments").iterdir())[0]
    assert "rejected" in json.loads((first / "_updated.done").read_text())


def exported_lines(folder: Path) -> list[dict]:
    return [json.loads(line) for f in folder.glob("*.jsonl") for line in f.read_text().splitlines()]


def segment_rows(data: Path, table: str) -> list[dict]:
    """Every row of one table of every segment, read with delta-rs."""
    rows = []
    for folder in sorted((data / "segments").iterdir()):
        rows += DeltaTable(str(folder / table)).to_pyarrow_table().to_pylist()
    return rows
