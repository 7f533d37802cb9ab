"""Parse inside the fetch tasks (fetcher.parse, the default) writes what the parse job
writes: the same rows in the segment's parse table, the same figures."""

import shutil

import pytest

from engine.runtime.layout import DataDir
from jobs.parse import parse

pytestmark = [pytest.mark.spark, pytest.mark.web]

FIGURES = ("pages", "html", "failed", "outlinks", "sitemap_urls")


def _parse_rows(spark, segment) -> dict:
    rows = spark.read.format("delta").load(segment.table("parse")).collect()
    return {row["url"]: row.asDict(recursive=True) for row in rows}


def test_the_fetch_tasks_parse_as_the_parse_job_does(spark, crawled, conf, tmp_path):
    data, _, _ = crawled
    copy = DataDir.at(shutil.copytree(data.root, tmp_path / "data"))
    names = copy.segment_names()[:3]  # the fixture's rounds (other tests add segments after)
    assert len(names) == 3
    for name in names:
        segment = copy.segment(name)
        in_fetch = segment.summary("parsed")
        assert in_fetch["in_fetch"] == 1  # no parse job ran in the crawl
        by_tasks = _parse_rows(spark, segment)
        by_job = parse(spark, conf, segment)  # re-parses the copy's segment
        assert {key: in_fetch[key] for key in FIGURES} == {key: by_job[key] for key in FIGURES}
        assert by_tasks == _parse_rows(spark, segment)
    parsed = [copy.segment(name).summary("parsed")["pages"] for name in names]
    assert sum(parsed) > 0
