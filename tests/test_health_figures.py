"""engine.tables.health without Spark: the figures are the tables' (delta-rs), a call
after a commit gets the figures read before while a thread reads the new ones, and
the Prometheus text holds them (prometheus_client's own parser)."""

import pyarrow as pa
from deltalake import write_deltalake
from prometheus_client.parser import text_string_to_metric_families

from engine.tables.health import Health
from engine.tables.prometheus import exposition


def crawldb(statuses: list[str]) -> pa.Table:
    return pa.table(
        {"url": [f"http://a.test/{i}" for i in range(len(statuses))], "status": statuses}
    )


def test_figures_follow_the_tables_one_read_behind(tmp_path):
    write_deltalake(str(tmp_path / "crawldb"), crawldb(["fetched"] * 3 + ["gone"]))
    robots = pa.table(
        {"host": ["a", "b", "c"], "http_status": pa.array([200, 503, None], pa.int32())}
    )
    write_deltalake(str(tmp_path / "robots"), robots)
    health = Health(str(tmp_path))
    first = health.figures()  # nothing read yet: read now
    assert first.statuses == {"fetched": 3, "gone": 1}
    assert first.robots == {"2xx": 1, "3xx": 0, "4xx": 0, "5xx": 1, "none": 1}
    assert first.jobs == {} and first.hosts == [] and first.running is None
    write_deltalake(str(tmp_path / "crawldb"), crawldb(["unfetched"] * 2), mode="append")
    assert health.figures().statuses == {"fetched": 3, "gone": 1}  # never waits on a read
    health._reading.join(timeout=30)
    assert health.figures().statuses == {"fetched": 3, "gone": 1, "unfetched": 2}


def test_the_prometheus_text_holds_the_figures(tmp_path):
    write_deltalake(str(tmp_path / "crawldb"), crawldb(["fetched", "duplicate", "fetched"]))
    text = exposition(Health(str(tmp_path)).figures()).decode()
    found = {
        f.name: {tuple(s.labels.items()): s.value for s in f.samples}
        for f in text_string_to_metric_families(text)
    }
    assert found["trawl_crawldb_all_urls"] == {(): 3.0}
    assert found["trawl_crawldb_urls"][(("status", "duplicate"),)] == 1.0
    assert found["trawl_crawldb_urls"][(("status", "unfetched"),)] == 0.0
    assert found["trawl_last_round_finished_timestamp_seconds"] == {(): 0.0}  # none yet
    assert found["trawl_data_directory_bytes"][()] > 0


def test_a_data_directory_not_made_yet_has_empty_figures(tmp_path):
    figures = Health(str(tmp_path / "not-yet")).figures()
    assert figures.statuses == {} and figures.jobs == {} and figures.disk["data"] == 0
    assert figures.disk["size"] > 0
