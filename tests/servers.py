"""Servers the tests and benchmarks start as a user would, each in its own process:
``./submit.sh api`` over a data directory, and any command that serves HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serving(command: list[str], probe: str, log: Path, env=None, cwd=None, seconds=120):
    """Run ``command`` (its output in ``log``) until the ``with`` ends; the block starts
    once ``probe`` (a URL) answers. A server that dies first fails with its log."""
    with open(log, "w") as sink:
        server = subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
            cwd=cwd,
        )
    try:
        deadline = time.monotonic() + seconds
        while True:
            try:
                requests.get(probe, timeout=2)
                break
            except requests.ConnectionError:
                assert server.poll() is None, log.read_text()
                assert time.monotonic() < deadline, f"{command[0]} did not answer"
                time.sleep(0.2)
        yield server
    finally:
        server.terminate()
        server.wait(timeout=30)


@contextmanager
def api_server(data: Path, log: Path, *conf: str, env=None):
    """``./submit.sh api`` over ``data`` with ``--conf`` settings ``conf``: its base URL."""
    port = free_port()
    command = [str(ROOT / "submit.sh"), "api", "--data", str(data), "--port", str(port)]
    command += [part for setting in conf for part in ("--conf", setting)]
    base = f"http://127.0.0.1:{port}"
    with serving(command, f"{base}/openapi.json", log, env=env):
        yield base
