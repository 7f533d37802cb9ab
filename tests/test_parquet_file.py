"""Parquet files written by Python tasks themselves (lib.parquet_file, engine.tables.task_files):
read back with pyarrow and as a Delta table with delta-rs. The session is needed only
for the table's Arrow schema (pyspark converts types with the session's settings)."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

import lib.parquet_file as parquet_file
from crawldb.schema import FETCH
from engine.tables import task_files
from lib.storage import LocalStorage

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("spark")]


def fetch_rows(count: int, body: bytes = b"<html>x</html>") -> list[dict]:
    rows = []
    for k in range(count):
        row = FETCH.empty_row()
        row.update(
            url=f"http://a.test/{k}",
            host="a.test",
            fetch_status="success",
            http_status=200,
            fetched_at=1_764_700_000_123 + k,  # epoch ms, as the fetcher gives it
            content=body,
            headers={"content-type": "text/html"},
            warc_offset=k * 1000,
        )
        rows.append(row)
    return rows


def stored_batches(rows: list[dict], size: int):
    stored = task_files.stored_schema(FETCH)
    made = task_files.python_schema(stored)
    for start in range(0, len(rows), size):
        batch = pa.RecordBatch.from_pylist(rows[start : start + size], schema=made)
        yield task_files.as_stored(batch, stored)


def test_stored_schema_keeps_columns_and_makes_times_utc_microseconds():
    stored = task_files.stored_schema(FETCH)
    assert stored.names == FETCH.names
    assert stored.field("fetched_at").type == pa.timestamp("us", tz="UTC")
    assert stored.field("content").type == pa.binary()
    assert stored.field("warc_offset").type == pa.int64()


def test_file_reads_back_row_for_row_with_times_converted(tmp_path):
    rows = fetch_rows(300)
    path = str(tmp_path / "part-00000.zstd.parquet")
    stored = task_files.stored_schema(FETCH)
    written, size = parquet_file.write_parquet(
        LocalStorage(), path, stored_batches(rows, 256), stored, "zstd"
    )
    assert (written, size) == (300, (tmp_path / "part-00000.zstd.parquet").stat().st_size)
    back = pq.read_table(path)
    assert back.schema.equals(stored)
    assert back.column("url").to_pylist() == [r["url"] for r in rows]
    first = back.column("fetched_at")[0].value  # microseconds since the epoch
    assert first == rows[0]["fetched_at"] * 1000
    assert back.column("headers")[0].as_py() == [("content-type", "text/html")]
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"


def test_small_batches_are_gathered_into_bounded_row_groups(tmp_path, monkeypatch):
    body = b"x" * 1000
    monkeypatch.setattr(parquet_file, "ROW_GROUP_BYTES", 50_000)
    path = str(tmp_path / "part.parquet")
    stored = task_files.stored_schema(FETCH)
    parquet_file.write_parquet(
        LocalStorage(), path, stored_batches(fetch_rows(400, body), 10), stored, "snappy"
    )
    meta = pq.ParquetFile(path).metadata
    sizes = [meta.row_group(k).num_rows for k in range(meta.num_row_groups)]
    assert sum(sizes) == 400
    assert 1 < len(sizes) < 40  # not one group per 10-row batch, nor one for all
    assert max(sizes) <= 60  # about 50 rows of 1 KB bodies each


def test_commit_keeps_the_successful_files_and_removes_the_others(tmp_path):
    storage = LocalStorage()
    table = str(tmp_path / "fetch")
    stored = task_files.stored_schema(FETCH)
    run = task_files.new_run(storage, table)
    written = []
    for index, attempt, count in ((0, 0, 5), (0, 1, 7), (1, 0, 3)):
        path = task_files.task_file(table, run, index, attempt, "zstd")
        batches = stored_batches(fetch_rows(count), 256)
        for batch in task_files.write_task_file(storage, path, batches, stored, "zstd"):
            written.extend(batch.to_pylist())
    succeeded = [written[1], written[2]]  # attempt 0 of task 0 failed
    task_files.commit(storage, table, run, succeeded, stored, "trawl fetch segment=test")
    delta = DeltaTable(table)
    expected = sorted(f["file"] for f in succeeded)
    assert sorted(Path(uri).name for uri in delta.file_uris()) == expected
    assert sorted(p.name for p in (tmp_path / "fetch").glob("*.parquet")) == expected
    assert delta.to_pyarrow_table().num_rows == 10
    assert delta.history()[0]["userMetadata"] == "trawl fetch segment=test"


def test_a_table_never_committed_is_cleared_and_a_committed_one_kept(tmp_path):
    storage = LocalStorage()
    table = tmp_path / "fetch"
    table.mkdir()
    (table / "part-00000-old-a0.zstd.parquet").write_bytes(b"left by a killed run")
    task_files.new_run(storage, str(table))
    assert not table.exists()
    stored = task_files.stored_schema(FETCH)
    run = task_files.new_run(storage, str(table))
    task_files.commit(storage, str(table), run, [], stored, "empty")
    assert DeltaTable(str(table)).to_pyarrow_table().num_rows == 0
    task_files.new_run(storage, str(table))
    assert (table / "_delta_log").is_dir()


@pytest.mark.parametrize("codec", ["uncompressed", "snappy", "gzip", "zstd"])
def test_spark_codec_names_are_accepted(tmp_path, codec):
    stored = task_files.stored_schema(FETCH)
    path = str(tmp_path / "part.parquet")
    rows, _ = parquet_file.write_parquet(
        LocalStorage(), path, stored_batches(fetch_rows(3), 256), stored, codec
    )
    assert rows == 3 and pq.read_table(path).num_rows == 3
