"""Run one command and print its wall time, CPU time and peak memory as a JSON line.

Usage: python measure.py OUTPUT_JSON -- COMMAND ARGS... (the command's own output passes
through). Each measured command gets a parent of its own, so that peak memory is its own.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time


def main() -> int:
    """Run the command after ``--``; write its figures to the file given first."""
    output, command = sys.argv[1], sys.argv[sys.argv.index("--") + 1 :]
    start = time.monotonic()
    code = subprocess.call(command)
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures = {
        "exit": code,
        "seconds": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak_bytes": usage.ru_maxrss * 1024,
    }
    with open(output, "w", encoding="utf-8") as handle:
        json.dump(figures, handle)
    return code


if __name__ == "__main__":
    sys.exit(main())
