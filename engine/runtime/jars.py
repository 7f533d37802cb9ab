"""Record the Delta Lake jars Ivy resolved, for submit.sh's later ``--jars``.

Run once by submit.sh (``spark-submit --packages io.delta:... engine/runtime/jars.py LIST``)
when it has no list of the jars yet, with Ivy's output in a log file: the jobs after it
start with ``--jars`` and resolve nothing. Writes LIST (comma-separated ``file:`` URIs
of the jars under the Ivy cache) atomically, so that a submit running at the same time
reads the old list or the new one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from engine.runtime.session import cache_dir


def ivy_jars(listed: str) -> list[str]:
    """The jars of ``spark.jars`` (comma-separated) that Ivy put in Trawl's cache."""
    folder = (cache_dir() / "ivy" / "jars").resolve()
    jars = [jar for jar in listed.split(",") if jar]
    return [
        jar for jar in jars if Path(jar.removeprefix("file://")).resolve().is_relative_to(folder)
    ]


def write_list(jars: list[str], target: Path) -> None:
    """Write the list where submit.sh reads it, atomically."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f"{target.name}.{os.getpid()}")
    temp.write_text(",".join(jars))
    temp.replace(target)


def main(argv: list[str]) -> int:
    """Read ``spark.jars`` from the JVM spark-submit started; write the list to argv[0]."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # the gateway to spark-submit's JVM, no context
    jars = ivy_jars(SparkConf().get("spark.jars", ""))
    if not jars:
        print("jars: Ivy resolved no jar into the cache", file=sys.stderr)
        return 1
    write_list(jars, Path(argv[0]))
    print(f"jars: {len(jars)} jars listed in {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
