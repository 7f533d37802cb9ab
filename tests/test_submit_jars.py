"""submit.sh resolves the Delta jars through Ivy once, from Maven Central alone, in a run
of its own whose output goes to a log file; it records the list, and the jobs pass it
with --jars. A job's terminal shows Trawl's lines, Spark's log going to DIR/logs/."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from engine.runtime.session import cache_dir

pytestmark = pytest.mark.spark  # Spark jobs, through submit.sh

ROOT = Path(__file__).resolve().parent.parent


def submit(cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRAWL_CACHE": str(cache)}
    env.pop("TRAWL_RECORD_JARS", None)
    return subprocess.run(
        [str(ROOT / "submit.sh"), *args], env=env, capture_output=True, text=True, timeout=600
    )


SPARK_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (INFO|WARN|ERROR)|^WARNING:|^::|Ivy", re.M)


def trawl_lines_only(stderr: str) -> bool:
    return SPARK_LINE.search(stderr) is None


def test_second_job_uses_the_recorded_jars_and_reads_delta(tmp_path):
    # A cache of its own, sharing the Ivy files already downloaded (no network needed).
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "ivy").symlink_to(cache_dir() / "ivy", target_is_directory=True)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\nhttp://b.test/\n")
    data = tmp_path / "data"

    first = submit(cache, "inject", "--seeds", str(seeds), "--data", str(data))
    assert first.returncode == 0, first.stderr[-2000:]
    assert "fetching the Delta Lake jars" in first.stderr  # Ivy ran, in a run of its own
    resolved = (cache / "logs" / "resolve-jars.log").read_text()
    assert "resolution report" in resolved and "not found" not in resolved
    assert trawl_lines_only(first.stdout + first.stderr), first.stderr
    logs = list((data / "logs").glob("inject-*.log"))
    assert len(logs) == 1 and "SparkContext" in logs[0].read_text()  # Spark's log
    assert f"Spark's log: {logs[0]}" in first.stderr
    lists = list((cache / "jars").glob("io.delta_delta-spark_*.txt"))
    assert len(lists) == 1
    jars = lists[0].read_text().split(",")
    assert any("io.delta_delta-spark_" in jar for jar in jars)
    assert all(Path(jar.removeprefix("file://")).is_file() for jar in jars)

    second = submit(cache, "readdb", "--data", str(data), "--stats", "--json")
    assert second.returncode == 0, second.stderr[-2000:]
    assert "fetching the Delta Lake jars" not in second.stderr  # Ivy did not run
    assert trawl_lines_only(second.stdout + second.stderr), second.stderr
    assert json.loads(second.stdout)["urls"] == 2  # Delta read through the listed jars

    # A jar gone from the cache: the list is not trusted, Ivy resolves again.
    lists[0].write_text(",".join([*jars, "file:///nonexistent/gone.jar"]))
    third = submit(cache, "readdb", "--data", str(data), "--stats", "--json")
    assert third.returncode == 0, third.stderr[-2000:]
    assert "fetching the Delta Lake jars" in third.stderr
    assert "gone.jar" not in lists[0].read_text()  # recorded again
