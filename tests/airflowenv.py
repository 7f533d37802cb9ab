"""Apache Airflow for the DAG tests, in an environment of its own.

Airflow's dependency tree is large (about 660 MB) and pins packages of its own, so it
is kept out of Trawl's ``.venv``: this module makes ``$TRAWL_CACHE/airflow/venv`` with
the requirement below on first use and reuses it while the requirement is unchanged.
The DAG drives Trawl through ``submit.sh``, so the two environments never mix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

REQUIREMENT = "apache-airflow==3.3.2"
INSTALL_TIMEOUT_S = 1800


def home() -> Path:
    return Path(os.environ.get("TRAWL_CACHE", Path.home() / ".cache" / "trawl")) / "airflow"


def python() -> Path:
    """The Airflow environment's interpreter, installed on first use."""
    env = home() / "venv"
    stamp = env / ".trawl-requirement"
    interpreter = env / "bin" / "python"
    if stamp.is_file() and stamp.read_text() == REQUIREMENT and interpreter.is_file():
        return interpreter
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    subprocess.run(
        [str(interpreter), "-m", "pip", "install", "--quiet", REQUIREMENT],
        check=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    stamp.write_text(REQUIREMENT)
    return interpreter


if __name__ == "__main__":
    print(python())
    sys.exit(0)
