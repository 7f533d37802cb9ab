"""Trawl on Apache Airflow: one crawl round per schedule interval, and the crawldb's
maintenance (dedup, rank, maintain) on a schedule of its own.

Put this folder in Airflow's DAGs folder (``[core] dags_folder``, or a symlink to this
file); the DAGs run Trawl through its own ``submit.sh``, so Airflow's environment never
imports pyspark (Airflow and Trawl keep separate Python environments).

``trawl_crawl_round`` -- ``inject`` (only when a seed file is given) -> ``generate`` ->
``fetch`` -> ``parse`` -> ``updatedb``. ``trawl_maintenance`` -- ``dedup`` -> ``rank`` ->
``maintain`` (compaction, VACUUM, segment retention, each on its threshold).
``parse`` is skipped when the fetch tasks parsed the segment (``fetcher.parse``, the
default); it runs when that is switched off.

Parameters (DAG params, overridable per run with ``airflow dags trigger --conf``), each
falling back to an Airflow Variable when left empty:

* ``data_dir`` (Variable ``trawl_data_dir``): the data directory, local or ``hdfs://``;
* ``master`` (Variable ``trawl_master``, default ``local[*]``): the Spark master;
* ``topN`` (-1: no limit): URLs per round, ``generate.topN``;
* ``conf``: list of ``KEY=VALUE`` settings given to every job;
* ``seeds``: a seed file to inject before generating (empty: no inject);
* ``trawl_home`` (Variable ``trawl_home``, default: the checkout holding this file).

Rounds never overlap: ``max_active_runs=1`` per DAG, and every Trawl job holds the data
directory's lock, so the maintenance DAG and a round wait for each other. A task is
retried only on the exit codes that a later attempt can change (README.md, "Exit
codes"): 3 (another job holds the lock) and 255 (the job failed: a lost executor, a full
disk). 2 (a mistake in what was given: a seed file without a usable line, an unknown
key), 4 (submit.sh could not set up Java, packages or jars) and any other code fail the
task at once. ``generate`` exiting 1 (nothing due, as Nutch's generate) skips the rest
of the round instead of failing it. Each stage
takes the oldest segment waiting for it, so a round that failed half way is completed
by the next one.
"""

from __future__ import annotations

import shlex
from datetime import datetime, timedelta
from pathlib import Path

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, Param
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

DEFAULT_HOME = str(Path(__file__).resolve().parent.parent)
NOTHING_DUE = 1  # generate's exit code when no URL is due
NOTHING_TO_DO = 1  # parse's exit code when no segment waits for it
NO_SEEDS = 99  # the inject task's own exit code when no seed file is given
RETRIED = (3, 255)  # the lock is held; the job failed. Any other failure is not retried.

PARAMS = {
    "data_dir": Param(
        "", type="string", description="data directory (else Variable trawl_data_dir)"
    ),
    "master": Param("", type="string", description="Spark master (else Variable trawl_master)"),
    "topN": Param(-1, type="integer", description="URLs per round, -1 for no limit"),
    "conf": Param([], type="array", items={"type": "string"}, description="KEY=VALUE settings"),
    "seeds": Param("", type="string", description="seed file to inject first (optional)"),
    "trawl_home": Param("", type="string", description="Trawl checkout, else Variable trawl_home"),
}
DEFAULT_ARGS = {
    "owner": "trawl",
    "retries": 2,
    "retry_delay": timedelta(minutes=5),
}
MACROS = {"sh": shlex.quote, "default_home": DEFAULT_HOME}

SUBMIT = "{{ sh(params.trawl_home or var.value.get('trawl_home', default_home)) }}/submit.sh"
COMMON = (
    " --data {{ sh(params.data_dir or var.value.get('trawl_data_dir', '')) }}"
    " --master {{ sh(params.master or var.value.get('trawl_master', 'local[*]')) }}"
    "{% for setting in params.conf %} --conf {{ sh(setting) }}{% endfor %}"
)


# What both DAGs share: no catch-up, never two runs at once, retries, the macros.
SHARED = {
    "start_date": datetime(2026, 1, 1),
    "catchup": False,
    "max_active_runs": 1,
    "default_args": DEFAULT_ARGS,
    "user_defined_macros": MACROS,
    "tags": ["trawl"],
    "doc_md": __doc__,
}


class TrawlJob(BashOperator):
    """A ``submit.sh`` command whose failure is retried only when its exit code is one
    of ``RETRIED``: a mistake in what was given fails the same way on every attempt."""

    def execute(self, context):
        """Run the command; a failure not to be retried raises ``AirflowFailException``."""
        try:
            return super().execute(context)
        except AirflowSkipException:
            raise
        except AirflowException as exc:
            process = self.subprocess_hook.sub_process
            code = process.returncode if process is not None else None
            if code in RETRIED:
                raise
            raise AirflowFailException(f"submit.sh exited {code}: not retried") from exc


def trawl(task_id: str, job: str, extra: str = "", **kwargs) -> TrawlJob:
    """A task running ``submit.sh JOB`` with the run's data directory, master and settings."""
    return TrawlJob(task_id=task_id, bash_command=f"{SUBMIT} {job}{COMMON}{extra}", **kwargs)


with DAG(
    dag_id="trawl_crawl_round",
    description="One Trawl crawl round: inject, generate, fetch, parse, updatedb",
    schedule="@daily",
    params=PARAMS,
    **SHARED,
) as crawl_round:
    inject = TrawlJob(
        task_id="inject",
        bash_command=(
            "{% if not params.seeds %}exit " + str(NO_SEEDS) + "{% endif %}\n"
            f"{SUBMIT} inject --seeds {{{{ sh(params.seeds) }}}}{COMMON}"
        ),
        skip_on_exit_code=NO_SEEDS,
    )
    generate = trawl(
        "generate",
        "generate",
        " --conf generate.topN={{ params.topN }}",
        skip_on_exit_code=NOTHING_DUE,
        trigger_rule="none_failed",  # also when inject was skipped
    )
    fetch = trawl("fetch", "fetch")
    # With fetcher.parse (the default) fetch has parsed the segment: parse finds none
    # waiting, exits 1 and is skipped; updatedb runs after a fetch that succeeded,
    # whether parse ran or was skipped, and is skipped with the round when generate is.
    parse = trawl("parse", "parse", skip_on_exit_code=NOTHING_TO_DO)
    updatedb = trawl("updatedb", "updatedb", trigger_rule="none_failed_min_one_success")
    inject >> generate >> fetch >> parse >> updatedb
    fetch >> updatedb

with DAG(
    dag_id="trawl_maintenance",
    description="Trawl crawldb maintenance: duplicates, PageRank, then housekeeping",
    schedule="@weekly",
    params={k: PARAMS[k] for k in ("data_dir", "master", "conf", "trawl_home")},
    **SHARED,
) as maintenance:
    trawl("dedup", "dedup") >> trawl("rank", "rank") >> trawl("maintain", "maintain")
