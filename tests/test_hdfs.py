"""Trawl with its data directory on a real HDFS (MiniDFSCluster: NameNode, DataNode and
WebHDFS on loopback).

Two crawl rounds through ``./submit.sh crawl --data hdfs://...``: the crawldb and the
segment tables are Delta tables on HDFS, the markers, the lock and the WARC files are
written through WebHDFS (the executors stream their WARC records). Read back from HDFS,
the crawldb equals the local-mode reference crawl and every fetched page has exactly one
response record in the segment's WARC files.
"""

import pytest
from crawlruns import AGENT, crawl_args, crawldb_summary, run_to_end, seeds_file
from weblog import entries_for, host_delays, politeness_violations, warc_page_responses

from engine.runtime.layout import DataDir
from lib.config import load_config

pytestmark = [pytest.mark.spark, pytest.mark.web, pytest.mark.hdfs]


def test_two_rounds_on_hdfs_equal_local_mode(spark, web, reference, hdfs, tmp_path):
    namenode, webhdfs = hdfs
    data = f"{namenode}/trawl/{tmp_path.name}/data"
    setting = f"hdfs.webhdfs.url={webhdfs}"
    args = crawl_args(web, data, "hdfs", 2) + ["--conf", setting]
    run_to_end([*args, "--seeds", str(seeds_file(web, tmp_path))], tmp_path / "out.txt")

    assert crawldb_summary(spark, data) == reference
    on_hdfs = DataDir.at(data, load_config(overrides=[setting]))
    assert not on_hdfs.storage.exists(on_hdfs.path("_lock"))  # released
    names = on_hdfs.segment_names()
    assert len(names) == 2
    for name in names:
        segment = on_hdfs.segment(name)
        assert segment.done("updated")
        answered = (
            spark.read.format("delta")
            .load(segment.table("fetch"))
            .where("http_status IS NOT NULL AND origin != 'robots'")
        )
        expected = sorted(r["url"] for r in answered.select("url").collect())
        assert expected, f"segment {name} fetched nothing"
        assert sorted(warc_page_responses(segment)) == expected
    assert politeness_violations(entries_for(web, AGENT("hdfs")), host_delays(web)) == []


def test_a_second_writer_on_hdfs_is_refused(hdfs):
    from engine.runtime.lock import DataDirLock, LockedError

    namenode, webhdfs = hdfs
    conf = load_config(overrides=[f"hdfs.webhdfs.url={webhdfs}"])
    data = DataDir.at(f"{namenode}/trawl/locked", conf)
    with DataDirLock(data, "crawl"):
        with pytest.raises(LockedError, match="in use by another Trawl job: crawl"):
            DataDirLock(data, "generate").__enter__()
    with DataDirLock(data, "generate"):  # released, and free again
        pass
