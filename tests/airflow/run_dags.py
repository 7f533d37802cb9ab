"""Run inside the Airflow environment (tests/airflowenv.py) by tests/test_airflow.py:
loads dags/ in a DagBag, prints the DAGs' shape, then runs one DAG with ``dag.test()``
and prints its task states, as JSON lines on stdout.

Usage: python run_dags.py DAGS_FOLDER DAG_ID RUN_CONF_JSON
"""

import json
import sys

from airflow.dag_processing.dagbag import DagBag


def shape(dag) -> dict:
    return {
        "dag_id": dag.dag_id,
        "max_active_runs": dag.max_active_runs,
        "catchup": dag.catchup,
        "downstream": {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks},
        "retries": {t.task_id: t.retries for t in dag.tasks},
    }


def main(folder: str, dag_id: str, run_conf: str) -> int:
    bag = DagBag(dag_folder=folder)
    print(json.dumps({"import_errors": {k: str(v) for k, v in bag.import_errors.items()}}))
    for dag in bag.dags.values():
        print(json.dumps({"shape": shape(dag)}))
    run = bag.dags[dag_id].test(run_conf=json.loads(run_conf))
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    print(json.dumps({"run": {"state": str(run.state), "tasks": states}}))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
