"""Side-table writes in the background (engine.runtime.write_behind), on a real Spark session and
real Delta tables."""

from __future__ import annotations

import threading
from functools import partial

import pytest

from engine.runtime import write_behind
from engine.tables.delta_commits import delta_commit_message


def _label(spark, path: str) -> str | None:
    from delta.tables import DeltaTable

    return DeltaTable.forPath(spark, path).history(1).collect()[0]["userMetadata"]


def _write(label: str | None, path: str, spark) -> None:
    frame = spark.createDataFrame([(path,)], "path STRING")
    if label is None:
        frame.write.format("delta").save(path)
        return
    with delta_commit_message(spark, label):
        frame.write.format("delta").save(path)


def test_side_writes_and_the_main_line_label_their_own_commits(spark, tmp_path):
    main, side, unlabelled = (str(tmp_path / name) for name in ("main", "side", "plain"))
    inside = threading.Event()

    def side_writes(session):
        assert inside.wait(60)  # made while the main line's label is set
        _write(None, unlabelled, session)
        _write("side", side, session)

    write_behind.later(spark, "side", side_writes)
    with delta_commit_message(spark, "main"):
        inside.set()
        write_behind.wait()
        spark.createDataFrame([(main,)], "path STRING").write.format("delta").save(main)
    assert _label(spark, main) == "main"
    assert _label(spark, side) == "side"
    assert _label(spark, unlabelled) is None


def test_side_writes_run_in_order_and_a_failure_is_raised_after_the_rest(spark, tmp_path):
    done = []

    def fails(session):
        done.append("fails")
        raise RuntimeError("side write failed")

    write_behind.later(spark, "a", lambda session: done.append("first"))
    write_behind.later(spark, "b", fails)
    write_behind.later(spark, "c", partial(_write, "last", str(tmp_path / "t")))
    with pytest.raises(RuntimeError, match="side write failed"):
        write_behind.wait()
    assert done == ["first", "fails"]
    assert _label(spark, str(tmp_path / "t")) == "last"
    write_behind.wait()  # nothing left, nothing raised again


def test_waiting_for_one_table_does_not_wait_for_later_writes_to_others(spark):
    done, release = [], threading.Event()

    def slow(session):
        assert release.wait(60)
        done.append("metrics")

    write_behind.later(spark, "robots", lambda session: done.append("robots"))
    write_behind.later(spark, "metrics", slow)
    write_behind.wait("robots")
    assert done == ["robots"]  # the metrics write is still waiting for its release
    release.set()
    write_behind.wait()
    assert done == ["robots", "metrics"]
