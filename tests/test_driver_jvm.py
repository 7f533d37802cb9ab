"""The driver JVM gets the options of conf/driver-java-options, whether it is started by
submit.sh or by a Python session (jobs.common.build_spark), and
TRAWL_DRIVER_JAVA_OPTIONS replaces them."""

import os
import subprocess
import time
from pathlib import Path

from jobs.common import driver_java_options

ROOT = Path(__file__).resolve().parent.parent


def test_options_come_from_the_file_unless_the_environment_replaces_them(monkeypatch):
    monkeypatch.delenv("TRAWL_DRIVER_JAVA_OPTIONS", raising=False)
    lines = (ROOT / "conf" / "driver-java-options").read_text().splitlines()
    listed = [line for line in lines if line.strip() and not line.startswith("#")]
    assert listed and driver_java_options() == " ".join(listed)
    monkeypatch.setenv("TRAWL_DRIVER_JAVA_OPTIONS", "-Xss2m")
    assert driver_java_options() == "-Xss2m"
    monkeypatch.setenv("TRAWL_DRIVER_JAVA_OPTIONS", "")
    assert driver_java_options() == ""


def test_python_session_runs_the_parallel_collector(spark):
    # conf/driver-java-options asks for it; Java 17 would otherwise run G1.
    assert "-XX:+UseParallelGC" in driver_java_options().split()
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    names = {bean.getName() for bean in beans.getGarbageCollectorMXBeans()}
    assert names == {"PS Scavenge", "PS MarkSweep"}


def driver_command_line(marker: str, job: subprocess.Popen, seconds: float) -> list[str]:
    """The command line of the driver JVM (SparkSubmit, not the launcher before it) whose
    arguments include ``marker``, looked for in /proc while ``job`` runs (at most
    ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and job.poll() is None:
        for entry in Path("/proc").iterdir():
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            # Not spark-class's bash nor the launcher JVM, whose arguments look alike.
            java = args[0].endswith(b"java") and b"org.apache.spark.launcher.Main" not in args
            driver = java and b"org.apache.spark.deploy.SparkSubmit" in args
            if driver and any(marker.encode() in a for a in args):
                return [a.decode() for a in args]
        time.sleep(0.05)
    return []


def test_submit_starts_the_driver_with_the_options(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRAWL_DRIVER_JAVA_OPTIONS"}
    data = tmp_path / "data-of-this-test"
    job = subprocess.Popen(
        [str(ROOT / "submit.sh"), "readdb", "--data", str(data), "--stats"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        command = driver_command_line(str(data), job, 120)
    finally:
        job.wait(timeout=120)
    assert command, "no driver JVM seen"
    for option in driver_java_options().split():
        assert option in command
