"""The crawldb table: a crawldb written by an older Trawl (fewer columns) is upgraded."""

import pytest

from crawldb.merge import new_row
from crawldb.schema import CRAWLDB
from engine.runtime.layout import DataDir
from engine.tables.frames import rows_to_df
from engine.tables.store import merge_rows, read_crawldb

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


def _rows(spark, urls, **fields):
    made = [
        {**new_row(u, "a.test", 1_700_000_000_000, score=1.0, depth=0, fetch_interval=60), **fields}
        for u in urls
    ]
    return rows_to_df(spark, spark.sparkContext.parallelize(made), CRAWLDB)


def test_an_upsert_rewrites_only_the_files_holding_its_urls(spark, tmp_path):
    from deltalake import DeltaTable

    data = DataDir.at(tmp_path / "data")
    first = [f"http://a.test/{n}" for n in range(40)]
    _rows(spark, first).repartition(4).write.format("delta").save(data.crawldb)
    before = set(DeltaTable(data.crawldb).file_uris())
    assert len(before) == 4
    changed = _rows(spark, ["http://a.test/3", "http://a.test/new"], status="fetched", depth=7)
    merge_rows(spark, data, changed, "test upsert")
    table = DeltaTable(data.crawldb)
    after = set(table.file_uris())
    holding = {
        r["_f"]
        for r in read_crawldb(spark, data)
        .selectExpr("input_file_name() _f", "url")
        .where("url = 'http://a.test/3'")
        .collect()
    }
    # The files without the changed URL are still the table's; the one with it is not.
    assert len(before & after) == 3 and not holding & before
    assert table.history(1)[0]["userMetadata"] == "test upsert"
    rows = {r["url"]: r for r in spark.read.format("delta").load(data.crawldb).collect()}
    assert set(rows) == {*first, "http://a.test/new"}
    assert (
        rows["http://a.test/3"]["depth"] == 7 and rows["http://a.test/new"]["status"] == "fetched"
    )
    assert rows["http://a.test/4"]["depth"] == 0
    assert rows["http://a.test/4"]["fetch_time"] == rows["http://a.test/3"]["fetch_time"]
    # No file of the run is left outside the table (empty tasks' files are deleted).
    on_disk = {p.name for p in (tmp_path / "data" / "crawldb").glob("*.parquet")}
    assert {f.rsplit("/", 1)[-1] for f in after} <= on_disk
    assert len(on_disk) == len(before | after)


def test_an_upsert_keeps_the_timestamps_of_the_rows_it_copies(spark, tmp_path):
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    data = DataDir.at(tmp_path / "data")
    _rows(spark, ["http://a.test/1", "http://a.test/2"]).coalesce(1).write.format("delta").save(
        data.crawldb
    )
    old = {r["url"]: r["fetch_time"] for r in read_crawldb(spark, data).collect()}
    merge_rows(spark, data, _rows(spark, ["http://a.test/2"], depth=3), "test upsert")
    new = {r["url"]: r["fetch_time"] for r in read_crawldb(spark, data).collect()}
    assert new == old
    for uri in DeltaTable(data.crawldb).file_uris():
        kind = pq.read_schema(uri).field("fetch_time").type
        assert str(kind) == "timestamp[us, tz=UTC]", uri


def test_a_crawldb_with_int96_timestamps_reads_and_is_rewritten_as_micros(spark, tmp_path):
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    from engine.runtime.session import session_conf

    data = DataDir.at(tmp_path / "data")
    urls = [f"http://a.test/{n}" for n in range(4)]
    with session_conf(spark, {"spark.sql.parquet.outputTimestampType": "INT96"}):
        _rows(spark, urls).repartition(2).write.format("delta").save(data.crawldb)
    written = DeltaTable(data.crawldb).file_uris()
    assert all(pq.ParquetFile(uri).schema.column(5).physical_type == "INT96" for uri in written)
    old = {r["url"]: r["fetch_time"] for r in read_crawldb(spark, data).collect()}
    merge_rows(spark, data, _rows(spark, urls[:1], depth=2), "test upsert")
    assert {r["url"]: r["fetch_time"] for r in read_crawldb(spark, data).collect()} == old
    for uri in set(DeltaTable(data.crawldb).file_uris()) - set(written):
        assert pq.ParquetFile(uri).schema.column(5).physical_type == "INT64", uri


def test_an_upsert_whose_keys_every_file_likely_holds_rewrites_every_file_without_a_scan(
    spark, tmp_path
):
    import shutil

    from deltalake import DeltaTable

    scanned, counted = DataDir.at(tmp_path / "scanned"), DataDir.at(tmp_path / "counted")
    _rows(spark, [f"http://a.test/{n}" for n in range(40)]).repartition(4).write.format(
        "delta"
    ).save(scanned.crawldb)
    shutil.copytree(scanned.crawldb, counted.crawldb)

    def files(data):
        return {uri.rsplit("/", 1)[-1] for uri in DeltaTable(data.crawldb).file_uris()}

    before = files(counted)
    # Every URL of one file: the scan finds that file alone; 11 keys in 4 files spare
    # 4 * (3/4)**11 = 0.17 files by chance, so the count alone rewrites every file.
    one_file = read_crawldb(spark, scanned).selectExpr("input_file_name() f", "url")
    first = one_file.first()["f"]
    urls = [r["url"] for r in one_file.where(one_file.f == first).collect()]
    urls.append("http://a.test/new")
    assert len(urls) == 11
    changed = _rows(spark, urls, status="fetched", depth=7).cache()
    try:
        merge_rows(spark, scanned, changed, "test upsert")
        merge_rows(spark, counted, changed, "test upsert", given=len(urls))
    finally:
        changed.unpersist()  # later tests ask the session for no cached frame
    assert len(before & files(scanned)) == 3
    assert not before & files(counted)
    rows = [sorted(map(tuple, read_crawldb(spark, d).collect())) for d in (scanned, counted)]
    assert rows[0] == rows[1] and len(rows[0]) == 41


def test_a_bucketed_crawldb_has_only_its_changed_buckets_written_again(
    spark, tmp_path, monkeypatch
):
    from deltalake import DeltaTable

    from engine.runtime.session import session_conf
    from engine.tables import buckets
    from engine.tables.store import create_crawldb

    monkeypatch.setattr(buckets, "BUCKET_ROWS", 5)  # 40 rows: as many buckets as allowed
    data = DataDir.at(tmp_path / "data")
    first = [f"http://a.test/{n}" for n in range(40)]
    with session_conf(spark, {"spark.sql.shuffle.partitions": "8"}):
        create_crawldb(spark, data, _rows(spark, first), "test create")

    def files():
        return [uri.rsplit("/", 1)[-1] for uri in DeltaTable(data.crawldb).file_uris()]

    before = files()
    count, held = buckets.layout(before)
    assert count == 8 and len(held) > 2
    changed = _rows(spark, ["http://a.test/3", "http://a.test/new"], status="fetched", depth=7)
    hit = {r[0] for r in changed.selectExpr(f"pmod(hash(url), {count})").collect()}
    with session_conf(spark, {"spark.sql.shuffle.partitions": "8"}):
        merge_rows(spark, data, changed, "test upsert", given=2)
    after = files()
    # The buckets of the changed URLs have new files; every other file is as it was.
    assert set(before) - set(after) == {n for b in hit if b in held for n in held[b]}
    assert {buckets.bucket_of(n) for n in set(after) - set(before)} == hit
    assert buckets.layout(after)[0] == count
    rows = {r["url"]: r for r in read_crawldb(spark, data).collect()}
    assert set(rows) == {*first, "http://a.test/new"}
    assert rows["http://a.test/3"]["depth"] == 7 and rows["http://a.test/3"]["status"] == "fetched"
    assert rows["http://a.test/4"]["depth"] == 0
    assert rows["http://a.test/4"]["fetch_time"] == rows["http://a.test/3"]["fetch_time"]
    # A file another writer adds ends the layout: the next upsert finds its files by a
    # scan, and loses nothing.
    _rows(spark, ["http://a.test/spark"]).write.format("delta").mode("append").save(data.crawldb)
    assert buckets.layout(files()) is None
    merge_rows(spark, data, _rows(spark, ["http://a.test/4"], depth=5), "test upsert")
    rows = {r["url"]: r["depth"] for r in read_crawldb(spark, data).collect()}
    assert set(rows) == {*first, "http://a.test/new", "http://a.test/spark"}
    assert rows["http://a.test/4"] == 5 and rows["http://a.test/3"] == 7


def test_a_bucketed_table_is_written_whole_again_in_buckets_for_its_size(spark, tmp_path):
    from deltalake import DeltaTable

    from engine.runtime.session import session_conf
    from engine.tables import buckets
    from engine.tables.store import create_crawldb

    assert buckets.count_for(None, 8) == 8 and buckets.count_for(0, 8) == 1
    assert buckets.count_for(buckets.BUCKET_ROWS + 1, 8) == 2
    assert buckets.count_for(100 * buckets.BUCKET_ROWS, 8) == 8
    assert not buckets.resized(2, 3 * buckets.BUCKET_ROWS, 8)
    assert buckets.resized(1, 3 * buckets.BUCKET_ROWS, 8) and buckets.resized(4, 10, 8)
    assert not buckets.resized(1, None, 8)
    data = DataDir.at(tmp_path / "data")
    create_crawldb(spark, data, _rows(spark, [f"http://a.test/{n}" for n in range(40)]), "c")

    def layout():
        return buckets.layout([u.rsplit("/", 1)[-1] for u in DeltaTable(data.crawldb).file_uris()])

    assert layout()[0] == 1  # a small table: one file, one task
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(buckets, "BUCKET_ROWS", 10)  # 42 rows now call for 5 buckets
        changed = _rows(spark, ["http://a.test/1", "http://a.test/new"], depth=3)
        with session_conf(spark, {"spark.sql.shuffle.partitions": "8"}):
            merge_rows(spark, data, changed, "test upsert", given=2)
        count, held = layout()
    assert count == 5 and len(held) > 1
    rows = {r["url"]: r["depth"] for r in read_crawldb(spark, data).collect()}
    assert len(rows) == 41 and rows["http://a.test/1"] == 3 and rows["http://a.test/2"] == 0


def test_rows_of_a_join_on_url_reach_their_buckets_files(spark, tmp_path, monkeypatch):
    """Spark drops a repartition by URL of a join on URL into as many partitions, and
    adaptive execution merges the join's small partitions: each row must still go to
    its bucket's file, not to its task's (a generate stamp once wrote 20 URLs of several
    buckets into bucket 0's file, leaving their old rows in place)."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable
    from pyspark.sql import functions as F

    from engine.runtime.session import session_conf
    from engine.tables import buckets
    from engine.tables.store import create_crawldb

    monkeypatch.setattr(buckets, "BUCKET_ROWS", 5)
    data = DataDir.at(tmp_path / "data")
    urls = [f"http://a.test/{n}" for n in range(40)]
    picked = spark.createDataFrame([(u,) for u in urls[::3]], "url STRING")
    with session_conf(spark, {"spark.sql.shuffle.partitions": "8"}):
        create_crawldb(spark, data, _rows(spark, urls), "test create")
        joined = read_crawldb(spark, data).join(picked, "url", "left_semi")
        merge_rows(spark, data, joined.withColumn("depth", F.lit(9)), "test stamp")
    depths = [(r["url"], r["depth"]) for r in read_crawldb(spark, data).collect()]
    assert sorted(u for u, _ in depths) == sorted(urls)  # each URL once
    assert {u for u, d in depths if d == 9} == set(urls[::3])
    for uri in DeltaTable(data.crawldb).file_uris():
        held = pq.read_table(uri, columns=["url"]).column("url").to_pylist()
        frame = spark.createDataFrame([(u,) for u in held], "url STRING")
        hashed = {r[0] for r in frame.selectExpr("pmod(hash(url), 8)").collect()}
        assert hashed == {buckets.bucket_of(uri.rsplit("/", 1)[-1])}
