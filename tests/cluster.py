"""A real Spark standalone cluster on loopback: one master and N workers, started with
the ``spark-class`` launcher of the pip pyspark (it has no ``start-master.sh``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent


from servers import free_port  # noqa: E402,F401 - the tests import it from here too


class StandaloneCluster:
    """``with StandaloneCluster(folder, workers=2) as cluster: ... cluster.url``."""

    def __init__(self, folder: Path, workers: int = 2, cores: int = 1, memory: str = "1536m"):
        self.folder = folder
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self.processes: list[subprocess.Popen] = []

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def __enter__(self) -> StandaloneCluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(self.ui_port),
        )
        for index in range(self.workers):
            work = self.folder / f"worker-{index}"
            self._launch(
                f"worker-{index}",
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--work-dir",
                str(work),
                "--webui-port",
                str(free_port()),
                self.url,
            )
        self._wait_for_workers(timeout=120)
        return self

    def __exit__(self, *exc_info) -> None:
        for process in reversed(self.processes):
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    def state(self) -> dict:
        """The master's JSON status (workers, applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as page:
            return json.load(page)

    def _launch(self, name: str, main_class: str, *args: str) -> None:
        env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable}
        log = open(self.folder / f"{name}.log", "w")  # noqa: SIM115 - kept open for the process
        command = [str(SPARK_HOME / "bin" / "spark-class"), main_class, *args]
        self.processes.append(
            subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        )

    def _wait_for_workers(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                alive = [w for w in self.state()["workers"] if w["state"] == "ALIVE"]
                if len(alive) == self.workers:
                    return
            except (OSError, ValueError):
                # Not up yet; or up, but its root page answers /json/ as HTML until the
                # JSON handler is attached (a race the suite's file order can expose).
                pass
            time.sleep(0.5)
        logs = {p.name: p.read_text()[-1500:] for p in self.folder.glob("*.log")}
        raise RuntimeError(f"the standalone cluster did not come up: {logs}")
