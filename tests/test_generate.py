"""generate on Spark: due URLs, best first, capped per host and in all, one host per partition."""

import pytest
from pyspark.sql import functions as F

from crawldb.merge import new_row
from crawldb.schema import CRAWLDB
from jobs.common import rows_to_df
from jobs.generate import generate, select_due
from jobs.layout import DataDir
from jobs.store import ensure_crawldb, merge_rows
from lib.config import load_config

pytestmark = pytest.mark.spark
NOW = 1_700_000_000_000  # in the past: generate() below uses the real clock


def crawldb_rows():
    rows = []
    for host in range(6):
        for page in range(5):
            row = new_row(
                f"http://h{host}.test/{page}",
                f"h{host}.test",
                NOW - 1000,
                score=host + page / 10,
                depth=page,
                fetch_interval=60,
            )
            rows.append(row)
    rows[0]["fetch_time"] = NOW + 1  # not due yet
    rows[1]["score"] = -1.0  # below generate.min.score
    return rows


@pytest.fixture(scope="module")
def crawldb(spark):
    return rows_to_df(spark, spark.sparkContext.parallelize(crawldb_rows()), CRAWLDB)


def test_due_and_min_score(crawldb):
    urls = {r["url"] for r in select_due(crawldb, load_config(), NOW).collect()}
    assert len(urls) == 28
    assert "http://h0.test/0" not in urls and "http://h0.test/1" not in urls


def test_caps_per_host_and_in_all_keep_the_best(crawldb):
    conf = load_config(overrides=["generate.max.count=2", "generate.topN=7"])
    chosen = select_due(crawldb, conf, NOW).collect()
    assert len(chosen) == 7
    per_host = {}
    for row in chosen:
        per_host.setdefault(row["host"], []).append(row["url"])
    assert all(len(urls) <= 2 for urls in per_host.values())
    assert sorted(per_host) == ["h2.test", "h3.test", "h4.test", "h5.test"]
    assert set(per_host["h5.test"]) == {"http://h5.test/4", "http://h5.test/3"}


def test_fetch_list_puts_each_host_in_one_partition(spark, tmp_path):
    data = DataDir.at(tmp_path / "data")
    ensure_crawldb(spark, data)
    rows = spark.sparkContext.parallelize(crawldb_rows())
    merge_rows(spark, data, rows_to_df(spark, rows, CRAWLDB), "test")
    conf = load_config(overrides=["fetcher.partitions=3"])
    name = generate(spark, conf, data)
    fetchlist = spark.read.format("delta").load(data.segment(name).table("fetchlist"))
    files_per_host = (
        fetchlist.withColumn("file", F.input_file_name())
        .groupBy("host")
        .agg(F.countDistinct("file").alias("files"))
        .collect()
    )
    assert len(files_per_host) == 6
    assert all(r["files"] == 1 for r in files_per_host)
    assert data.segment(name).summary("generated")["urls"] == fetchlist.count()
    assert generate(spark, load_config(overrides=["generate.min.score=100"]), data) is None
