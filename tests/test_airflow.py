"""The Airflow DAGs (dags/trawl_crawl.py) with the real apache-airflow package, in its own
environment (tests/airflowenv.py): they load without errors, their task graphs are the
documented ones, and a full ``dag.test()`` run of a crawl round against the local web
leaves fetched pages in the crawldb, politely; the maintenance DAG then runs on it."""

import json
import os
import subprocess

import pytest
from airflowenv import python
from conftest import ROOT
from crawlruns import AGENT, seeds_file, web_crawl_args
from deltalake import DeltaTable
from weblog import entries_for, host_delays, politeness_violations

from lib import vocabulary as st

pytestmark = [pytest.mark.spark, pytest.mark.web, pytest.mark.airflow]

ROUND = {
    "inject": ["generate"],
    "generate": ["fetch"],
    "fetch": ["parse", "updatedb"],
    "parse": ["updatedb"],
    "updatedb": [],
}
MAINTENANCE = {"dedup": ["rank"], "rank": ["maintain"], "maintain": []}


@pytest.fixture(scope="module")
def airflow(tmp_path_factory):
    """``run(dag_id, run_conf) -> (shapes, import errors, run)`` with a fresh Airflow home."""
    interpreter = python()  # installed on first use, cached under $TRAWL_CACHE/airflow
    home = tmp_path_factory.mktemp("airflow-home")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
    }
    for leaked in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_GATEWAY_PORT", "VIRTUAL_ENV"):
        env.pop(leaked, None)
    airflow_cli = interpreter.parent / "airflow"
    subprocess.run(
        [str(airflow_cli), "db", "migrate"], env=env, check=True, timeout=600, capture_output=True
    )

    def run(dag_id: str, run_conf: dict, log):
        done = subprocess.run(
            [
                str(interpreter),
                str(ROOT / "tests" / "airflow" / "run_dags.py"),
                str(ROOT / "dags"),
                dag_id,
                json.dumps(run_conf),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=open(log, "w"),
            text=True,
            timeout=1500,
            check=False,
        )
        assert done.returncode == 0, log.read_text()[-4000:]
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        shapes = {e["shape"]["dag_id"]: e["shape"] for e in lines if "shape" in e}
        errors = next(e["import_errors"] for e in lines if "import_errors" in e)
        result = next(e["run"] for e in lines if "run" in e)
        print(f"{dag_id}: {result}")  # the task states, for the record
        return shapes, errors, result

    run.interpreter, run.env = interpreter, env
    return run


def settings(data, agent: str) -> list[str]:
    args = web_crawl_args(data, agent, "db.max.depth=1")
    return [value for flag, value in zip(args[::2], args[1::2], strict=True) if flag == "--conf"]


def test_a_crawl_round_and_maintenance_run_in_airflow(airflow, web, spark, tmp_path):
    data = tmp_path / "data"
    conf = settings(data, AGENT("airflow"))
    run_conf = {"data_dir": str(data), "conf": conf, "seeds": str(seeds_file(web, tmp_path))}
    shapes, errors, result = airflow("trawl_crawl_round", run_conf, tmp_path / "round.log")

    assert errors == {}
    assert set(shapes) == {"trawl_crawl_round", "trawl_maintenance"}
    for dag_id, graph in (("trawl_crawl_round", ROUND), ("trawl_maintenance", MAINTENANCE)):
        assert shapes[dag_id]["downstream"] == graph
        assert shapes[dag_id]["max_active_runs"] == 1
        assert set(shapes[dag_id]["retries"].values()) == {2}
    assert result["state"] == "success"
    # fetcher.parse (the default): fetch parsed the segment, the parse task had none.
    assert result["tasks"] == {task: "success" for task in ROUND} | {"parse": "skipped"}

    rows = spark.read.format("delta").load(str(data / "crawldb")).collect()
    fetched = [r for r in rows if r["status"] == st.FETCHED]
    assert len(fetched) >= 2  # both seeds, in one round
    assert politeness_violations(entries_for(web, AGENT("airflow")), host_delays(web)) == []

    _, _, maintained = airflow(
        "trawl_maintenance", {"data_dir": str(data), "conf": conf}, tmp_path / "maintenance.log"
    )
    assert maintained["tasks"] == {"dedup": "success", "rank": "success", "maintain": "success"}
    ranked = spark.read.format("delta").load(str(data / "crawldb")).where("pagerank IS NOT NULL")
    assert ranked.count() >= len(fetched)
    jobs = [r["job"] for r in spark.read.format("delta").load(str(data / "metrics")).collect()]
    assert jobs.count("maintain") == 1


def test_only_a_locked_data_directory_or_a_failed_job_is_retried(airflow, tmp_path):
    done = subprocess.run(
        [
            str(airflow.interpreter),
            str(ROOT / "tests" / "airflow" / "exit_codes.py"),
            str(ROOT / "dags" / "trawl_crawl.py"),
            *map(str, (0, 1, 2, 3, 4, 99, 255)),
        ],
        env=airflow.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    outcomes = json.loads(done.stdout.splitlines()[-1])
    assert outcomes == {
        "0": "done",
        "1": "failed",  # the tasks that may exit 1 skip on it (skip_on_exit_code)
        "2": "failed",
        "3": "retried",
        "4": "failed",
        "99": "skipped",
        "255": "retried",
    }


def test_a_seed_file_without_a_usable_line_fails_the_round_without_retry(airflow, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("not a url\n")
    run_conf = {"data_dir": str(tmp_path / "data"), "seeds": str(seeds)}
    _, _, result = airflow("trawl_crawl_round", run_conf, tmp_path / "round.log")
    assert result["state"] == "failed"
    assert result["tasks"]["inject"] == "failed"  # at once: not up_for_retry
    assert result["tasks"]["generate"] == "upstream_failed"
    # inject ran once (its metrics row) and found the line malformed: nothing written.
    metrics = DeltaTable(str(tmp_path / "data" / "metrics")).to_pyarrow_table().to_pylist()
    assert [(row["job"], dict(row["figures"])["malformed_lines"]) for row in metrics] == [
        ("inject", 1.0)
    ]
    assert not (tmp_path / "data" / "crawldb").exists()
