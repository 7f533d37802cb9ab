"""A real HDFS on loopback for the tests: Hadoop's MiniDFSCluster (NameNode + DataNode
in one JVM, WebHDFS on), from the ``hadoop-client-minicluster`` jars of Maven Central.

The jars are fetched once by Ivy -- the ivy jar pyspark ships, so no Maven or Hadoop
install is needed -- into ``$TRAWL_CACHE/minihdfs`` (``tests/hdfs/ivy.xml``), and the
launcher ``tests/hdfs/MiniHdfs.java`` runs as a Java single-file program.

``.ci/run`` starts one for the whole test run and stops it afterwards::

    python tests/minihdfs.py start STATE_DIR   # prints TRAWL_TEST_HDFS=... lines
    python tests/minihdfs.py stop STATE_DIR

and the tests find it through ``TRAWL_TEST_HDFS`` / ``TRAWL_TEST_WEBHDFS``; without
them (``./submit.sh test`` outside CI) the ``hdfs`` fixture starts its own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "hdfs"
START_TIMEOUT_S = 180


def cache() -> Path:
    return Path(os.environ.get("TRAWL_CACHE", Path.home() / ".cache" / "trawl")) / "minihdfs"


def jars() -> Path:
    """The folder of the MiniDFSCluster jars, fetched by Ivy on first use."""
    lib = cache() / "lib"
    done = cache() / "ivy.xml.done"
    wanted = (HERE / "ivy.xml").read_text()
    if done.is_file() and done.read_text() == wanted:
        return lib
    import pyspark

    ivy = sorted((Path(pyspark.__file__).parent / "jars").glob("ivy-*.jar"))
    if not ivy:
        raise RuntimeError("pyspark ships no ivy jar: cannot fetch the MiniDFSCluster jars")
    shutil.rmtree(lib, ignore_errors=True)
    subprocess.run(
        [
            "java",
            "-cp",
            str(ivy[-1]),
            "org.apache.ivy.Main",
            "-ivy",
            str(HERE / "ivy.xml"),
            "-cache",
            str(cache() / "ivy"),
            "-retrieve",
            f"{lib}/[artifact]-[revision](-[classifier]).[ext]",
            "-confs",
            "default",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=900,
    )
    done.write_text(wanted)
    return lib


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class MiniHdfs:
    """One MiniDFSCluster process; ``url`` is ``hdfs://127.0.0.1:PORT``, ``webhdfs`` its
    NameNode's HTTP address."""

    def __init__(self, base: Path):
        self.base = Path(base)
        self.process: subprocess.Popen | None = None
        self.url = ""
        self.webhdfs = ""

    def start(self) -> MiniHdfs:
        classpath = f"{jars()}/*"
        self.base.mkdir(parents=True, exist_ok=True)
        log = open(self.base / "minihdfs.log", "w")  # noqa: SIM115 - the process's lifetime
        self.process = subprocess.Popen(
            [
                "java",
                "-Xmx512m",
                "-cp",
                classpath,
                str(HERE / "MiniHdfs.java"),
                str(self.base / "dfs"),
                str(free_port()),
                str(free_port()),
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.startswith("READY "):
                self.url, self.webhdfs = line.split()[1:3]
                return self
            if not line and self.process.poll() is not None:
                break
        self.stop()
        tail = (self.base / "minihdfs.log").read_text()[-3000:]
        raise RuntimeError(f"MiniDFSCluster did not start:\n{tail}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def _terminate(pid: int) -> None:
    """Stop the process group of ``pid`` and wait until its leader is gone (so that its
    files can be removed), killing it after 30 s."""
    try:
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.2)
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _state(folder: Path) -> Path:
    return Path(folder) / "minihdfs.json"


def main(argv: list[str]) -> int:
    action, folder = argv[0], Path(argv[1])
    if action == "start":
        server = MiniHdfs(folder).start()
        _state(folder).write_text(
            json.dumps({"pid": server.process.pid, "url": server.url, "webhdfs": server.webhdfs})
        )
        print(f"TRAWL_TEST_HDFS={server.url}")
        print(f"TRAWL_TEST_WEBHDFS={server.webhdfs}")
        return 0
    if action == "stop":
        state = json.loads(_state(folder).read_text())
        _terminate(state["pid"])
        return 0
    print("usage: minihdfs.py start|stop STATE_DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
