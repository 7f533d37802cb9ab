"""The crawldb table: a crawldb written by an older Trawl (fewer columns) is upgraded."""

import pytest

from crawldb.merge import new_row
from crawldb.schema import CRAWLDB
from jobs.common import rows_to_df
from jobs.layout import DataDir
from jobs.store import merge_rows, read_crawldb

pytestmark = [pytest.mark.spark]


def test_an_older_crawldb_gains_the_new_columns_and_keeps_its_rows(spark, tmp_path):
    data = DataDir.at(tmp_path / "data")
    old = new_row(
        "http://a.test/", "a.test", 1_700_000_000_000, score=1.0, depth=0, fetch_interval=86400
    )
    frame = rows_to_df(spark, spark.sparkContext.parallelize([old]), CRAWLDB)
    frame.drop("canonical", "duplicate_of").write.format("delta").save(data.crawldb)
    seen = read_crawldb(spark, data)  # readers see the declared schema at once
    assert seen.columns[-2:] == ["duplicate_of", "canonical"]
    assert seen.collect()[0]["canonical"] is None
    added = {**old, "url": "http://a.test/new", "canonical": "http://a.test/"}
    rows = rows_to_df(spark, spark.sparkContext.parallelize([added]), CRAWLDB)
    merge_rows(spark, data, rows, "test merge")
    table = {r["url"]: r for r in spark.read.format("delta").load(data.crawldb).collect()}
    assert set(table) == {"http://a.test/", "http://a.test/new"}
    assert table["http://a.test/new"]["canonical"] == "http://a.test/"
    assert table["http://a.test/"]["canonical"] is None
