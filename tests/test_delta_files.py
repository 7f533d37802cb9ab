"""engine.tables.delta_files: a small Delta table read through the files its log lists gives the
rows Spark's Delta reader gives, at every version; a table whose files do not hold all
of its rows (partitioned, column mapping, deletion vectors) is read by the Delta reader."""

from datetime import UTC, datetime

import pytest
from deltalake import DeltaTable

from engine.tables.delta_files import plain_files, read_current

pytestmark = [pytest.mark.spark]

ROWS = [
    ("a.test", 200, b"User-agent: *\nDisallow: /x", datetime(2026, 12, 3, 10, tzinfo=UTC)),
    ("b.test", 404, b"", datetime(2026, 12, 3, 11, tzinfo=UTC)),
    ("c.test", 200, b"User-agent: *", datetime(2026, 12, 3, 12, tzinfo=UTC)),
]
DDL = "host STRING, http_status INT, content BINARY, fetched_at TIMESTAMP"


def rows_of(frame) -> list[tuple]:
    return sorted(tuple(row) for row in frame.collect())


def delta_rows(spark, path: str) -> list[tuple]:
    return rows_of(spark.read.format("delta").load(path))


def file_names(paths) -> set[str]:
    return {path.rsplit("/", 1)[-1] for path in paths}


def test_every_version_reads_as_the_delta_reader_reads_it(spark, tmp_path):
    path = str(tmp_path / "robots")
    spark.createDataFrame(ROWS[:2], DDL).write.format("delta").save(path)
    spark.createDataFrame(ROWS, DDL).write.format("delta").mode("overwrite").save(path)
    spark.createDataFrame(ROWS[2:], DDL).write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE host = 'b.test'")
    frame = read_current(spark, path)
    assert rows_of(frame) == delta_rows(spark, path)
    assert len(rows_of(frame)) == 3  # a.test and c.test twice: removed files left out
    assert frame.schema == spark.read.format("delta").load(path).schema
    # Read as plain Parquet: exactly the files the current version lists.
    listed = DeltaTable(path).file_uris()
    assert file_names(frame.inputFiles()) == file_names(listed)
    assert len(list((tmp_path / "robots").glob("*.parquet"))) > len(listed)


def test_filters_and_times_work_on_the_files(spark, tmp_path):
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    spark.createDataFrame(ROWS, DDL).write.format("delta").save(path)
    oldest = int(datetime(2026, 12, 3, 11, tzinfo=UTC).timestamp() * 1000)
    fresh = read_current(spark, path).where(F.unix_millis("fetched_at") >= F.lit(oldest))
    assert sorted(row.host for row in fresh.collect()) == ["b.test", "c.test"]


def test_an_empty_table_reads_empty_with_its_schema(spark, tmp_path):
    path = str(tmp_path / "empty")
    spark.createDataFrame([], DDL).write.format("delta").save(path)
    frame = read_current(spark, path)
    assert frame.count() == 0
    assert frame.schema == spark.read.format("delta").load(path).schema


def test_a_partitioned_table_is_read_by_the_delta_reader(spark, tmp_path):
    path = str(tmp_path / "parted")
    frame = spark.createDataFrame(ROWS, DDL)
    frame.write.format("delta").partitionBy("http_status").save(path)
    assert not plain_files(DeltaTable(path))
    assert rows_of(read_current(spark, path)) == rows_of(frame)


@pytest.mark.parametrize(
    "properties",
    [
        {"delta.columnMapping.mode": "name"},
        {"delta.enableDeletionVectors": "true"},
    ],
)
def test_a_table_with_reader_features_is_read_by_the_delta_reader(spark, tmp_path, properties):
    path = str(tmp_path / "featured")
    columns = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
    spark.sql(f"CREATE TABLE delta.`{path}` ({DDL}) USING delta TBLPROPERTIES ({columns})")
    spark.createDataFrame(ROWS, DDL).write.format("delta").mode("append").save(path)
    if "delta.columnMapping.mode" in properties:
        spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN content TO body")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE host = 'b.test'")
    assert not plain_files(DeltaTable(path))
    frame = read_current(spark, path)
    assert rows_of(frame) == delta_rows(spark, path)
    assert sorted(row.host for row in frame.collect()) == ["a.test", "c.test"]
