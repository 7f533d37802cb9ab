"""Run inside the Airflow environment (tests/airflowenv.py) by tests/test_airflow.py: runs
the DAGs' own task class (``TrawlJob``) on commands that exit with each code Trawl uses,
and prints, as one JSON line, what Airflow is told for each: ``retried`` (an
``AirflowException``, which Airflow retries), ``failed`` (``AirflowFailException``: no
retry), ``skipped`` or ``done``.

Usage: python exit_codes.py DAG_FILE CODE...
"""

import importlib.util
import json
import sys

from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException


def outcome(job_class, code: int) -> str:
    task = job_class(task_id=f"exit_{code}", bash_command=f"exit {code}", skip_on_exit_code=99)
    try:
        task.execute({})
    except AirflowSkipException:
        return "skipped"
    except AirflowFailException:
        return "failed"
    except AirflowException:
        return "retried"
    return "done"


def main(dag_file: str, *codes: str) -> int:
    spec = importlib.util.spec_from_file_location("trawl_dags", dag_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print(json.dumps({code: outcome(module.TrawlJob, int(code)) for code in codes}))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
