"""maintain keeps a long crawl small: compaction of the crawldb's files past a threshold,
VACUUM keeping db.retention.hours of history, segment tables retired by count while the
archive stays; the crawldb reads the same after each step."""

import json

import pyarrow as pa
import pytest
from conftest import web_conf_args
from deltalake import DeltaTable, write_deltalake

from engine.runtime.layout import DataDir
from jobs import crawl, maintain
from lib.config import load_config


def conf(*extra: str) -> list[str]:
    agent = "https://trawl.invalid/test-maintain"
    return web_conf_args(agent, "crawl.maintain=false", "db.max.depth=1", *extra)


def crawldb_rows(data):
    table = DeltaTable(str(data / "crawldb")).to_pyarrow_table(columns=["url", "status"])
    return sorted(zip(table["url"].to_pylist(), table["status"].to_pylist(), strict=True))


@pytest.mark.spark
@pytest.mark.web
def test_maintain_compacts_vacuums_and_retires_segments(spark, web, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{web.site.base(0)}/\n{web.site.base(1)}/\n")
    data = tmp_path / "data"
    assert crawl.main(["--seeds", str(seeds), "--rounds", "2", "--data", str(data), *conf()]) == 0
    before = crawldb_rows(data)
    files_before = len(DeltaTable(str(data / "crawldb")).file_uris())
    on_disk = len(list((data / "crawldb").glob("*.parquet")))
    assert on_disk > files_before  # each round's rewrite left the replaced files
    settings = conf(
        "db.compact.files=0",
        "db.retention.hours=0",
        "db.vacuum.interval.hours=0",
        "segments.retention.count=1",
    )
    assert maintain.main(["--data", str(data), *settings]) == 0
    table = DeltaTable(str(data / "crawldb"))
    assert len(table.file_uris()) <= files_before
    assert len(list((data / "crawldb").glob("*.parquet"))) == len(table.file_uris())  # vacuumed
    metrics = DeltaTable(str(data / "metrics")).to_pyarrow_table().to_pylist()
    figures = dict(next(row for row in metrics if row["job"] == "maintain")["figures"])
    assert figures["compacted_files"] == files_before  # OPTIMIZE ran: past the threshold
    assert figures["vacuumed_files"] >= on_disk - files_before
    assert figures["segments_removed"] == 1
    assert crawldb_rows(data) == before
    segments = sorted((data / "segments").iterdir())
    for old in segments[:-1]:
        assert not (old / "fetch").exists() and not (old / "parse").exists()
        assert list((old / "warc").glob("*.warc.gz")) and (old / "cdxj").exists()  # kept
    assert (segments[-1] / "fetch").exists()
    assert json.loads((data / "_maintained.json").read_text())["vacuumed_at"] > 0
    # A crawl goes on over the maintained directory, maintaining it after its round.
    assert maintain.due(load_config(overrides=["db.compact.files=0"]), DataDir.at(data))
    args = ["--rounds", "1", "--adddays", "31", "--data", str(data)]
    assert crawl.main([*args, *conf("crawl.maintain=true", "db.compact.files=0")]) == 0
    metrics = DeltaTable(str(data / "metrics")).to_pyarrow_table().to_pylist()
    assert [row["job"] for row in metrics].count("maintain") == 2
    newest = sorted((data / "segments").iterdir())[-1]
    assert newest not in segments and (newest / "_updated.done").exists()  # a round applied
    assert len(DeltaTable(str(data / "crawldb")).file_uris()) <= files_before


def test_with_defaults_nothing_is_due_on_a_young_crawl(tmp_path):
    data = tmp_path / "data"
    write_deltalake(str(data / "crawldb"), pa.table({"url": ["http://a.test/"]}))
    assert not maintain.due(load_config(), DataDir.at(data))
