"""Round fixed-cost benchmark (issue 36): a crawl's time outside fetching, before and after.

Serves a local web (``python -m testweb``, its own process) and crawls it ROUNDS rounds
with ``./submit.sh crawl``, once with the code of BASELINE (a git worktree run on this
checkout's .venv) and once with this checkout, each against a fresh web, one after the
other in one run. Three webs by default, all measured in the same run:

* ``calm``: 20 hosts x 15 pages, fan-out 3, ``fetcher.server.delay=0.2``, 3 rounds
  (the issue's "calm local web");
* ``wide``: 500 hosts x 20 pages, fan-out 4, delay 0, 3 rounds (many hosts, no
  politeness wait: the rounds are CPU-bound and fixed cost shows as a share);
* ``scale``: the same at 2,000 hosts (the issue's share target is on 2,000 hosts).

Prints per crawl: wall time; start (the command to the first page request, from the
web's log); per round its wall time (generate's start to the end of updatedb, or of
the round's dedup pass when crawl runs one after it, from the metrics table; a pass run
inside updatedb is shown apart from updatedb's own time), its fetch's request
span (first to last request of the round, from the web's log), the time outside that
span, its share of the round, and the Spark jobs each stage ran (from Spark's event
log). Then ``./submit.sh demo``'s wall time with each code. Rounds after the first are
"warm".

Run on demand: ``.venv/bin/python tests/benchmarks/bench_rounds.py [--webs calm wide]
[--baseline REV] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(HERE)]

from bench_tail import baseline_checkout  # noqa: E402
from doc_tables import replace_block  # noqa: E402

from testweb.server import read_log  # noqa: E402

PYTHON = sys.executable
SECTION = "bench_rounds"
AGENT = "https://trawl.invalid/bench-rounds-{}".format
STAGES = ("generate", "fetch", "parse", "updatedb", "dedup")
WEBS = {
    "calm": {"hosts": 20, "pages": 15, "fanout": 3, "delay": 0.2, "rounds": 3, "subnet": 60},
    "wide": {"hosts": 500, "pages": 20, "fanout": 4, "delay": 0.0, "rounds": 3, "subnet": 62},
    "scale": {"hosts": 2000, "pages": 20, "fanout": 4, "delay": 0.0, "rounds": 3, "subnet": 64},
}


def start_web(folder: Path, web: dict) -> tuple[subprocess.Popen, dict]:
    command = [PYTHON, "-m", "testweb", "--log", str(folder / "requests.jsonl")]
    for name in ("hosts", "pages", "fanout", "subnet"):
        command += [f"--{name}", str(web[name])]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    return server, json.loads(server.stdout.readline())


def run_code(root: Path, command: list[str], log: Path) -> float:
    """Run a submit.sh command of the code at ``root``; its wall time in seconds.

    The code under test, not the checkout .venv's editable install points at: for the
    driver by PYTHONPATH, for Spark's Python workers (``python -m pyspark.daemon``, whose
    first path is the working directory) by the working directory."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    began = time.monotonic()
    with open(log, "w") as out:
        subprocess.run(
            [str(root / "submit.sh"), *command],
            stdout=out,
            stderr=subprocess.STDOUT,
            check=True,
            env=env,
            cwd=root,
        )
    return time.monotonic() - began


def crawl(root: Path, work: Path, label: str, name: str, web: dict) -> dict:
    """One crawl of a fresh web with the code at ``root``; its figures."""
    folder = work / f"{name}-{label}"
    folder.mkdir()
    events = folder / "events"
    events.mkdir()
    server, info = start_web(folder, web)
    try:
        seeds = folder / "seeds.txt"
        seeds.write_text("\n".join(info["seeds"]) + "\n")
        command = ["crawl", "--seeds", str(seeds), "--rounds", str(web["rounds"])]
        command += ["--data", str(folder / "data")]
        for setting in (
            f"fetcher.server.delay={web['delay']}",
            "fetcher.allow.private.networks=true",
            f"http.agent.url={AGENT(label)}",
            "spark.eventLog.enabled=true",
            "spark.eventLog.compress=false",
            "spark.eventLog.rolling.enabled=false",
            f"spark.eventLog.dir=file://{events}",
        ):
            command += ["--conf", setting]
        began = time.time()
        seconds = run_code(root, command, folder / "crawl.log")
    finally:
        server.terminate()
        server.wait()
    return figures(folder, label, began, seconds)


def stage_rows(data: Path) -> list[dict]:
    """The metrics table's rows of the round stages, oldest first, with ``start`` and
    ``end`` in epoch seconds."""
    from deltalake import DeltaTable

    rows = []
    for row in DeltaTable(str(data / "metrics")).to_pyarrow_table().to_pylist():
        finished = row["finished"]
        end = (finished if finished.tzinfo else finished.replace(tzinfo=UTC)).timestamp()
        rows.append({**row, "end": end, "start": end - row["seconds"]})
    return sorted(rows, key=lambda row: row["end"])


def spark_jobs(events: Path) -> list[float]:
    """Submission times (epoch seconds) of every Spark job in the event logs."""
    moments = []
    for path in (p for p in events.rglob("*") if p.is_file()):
        with open(path) as lines:
            for line in lines:
                if '"SparkListenerJobStart"' in line:
                    moments.append(json.loads(line)["Submission Time"] / 1000)
    return sorted(moments)


def nested(stages: dict) -> bool:
    """Whether the round's dedup pass ran inside updatedb (crawl marks the duplicates in
    updatedb's commit) rather than after it (the code before, or a segment's own pass)."""
    if "dedup" not in stages:
        return False
    return stages["dedup"]["start"] < stages["updatedb"]["end"] - 0.05


def figures(folder: Path, label: str, began: float, seconds: float) -> dict:
    log = sorted(
        (e for e in read_log(folder / "requests.jsonl") if AGENT(label) in e["ua"]),
        key=lambda e: e["start"],
    )
    pages = [e["start"] for e in log if e["path"] != "/robots.txt"]
    rows = stage_rows(folder / "data")
    jobs = spark_jobs(folder / "events")
    rounds = []
    for segment in sorted({r["segment"] for r in rows if r["job"] == "generate"}):
        stages = {r["job"]: r for r in rows if r["segment"] == segment and r["job"] in STAGES}
        if "updatedb" not in stages:
            continue
        # The round ends with its dedup pass when crawl runs one (crawl.dedup).
        start = stages["generate"]["start"]
        end = max(stages[job]["end"] for job in ("updatedb", "dedup") if job in stages)
        fetch = stages["fetch"]
        # A second of slack for the stage's start as the metrics table rounds it, but
        # never before the round's own start: rounds now follow each other within a
        # second, and the last round's final requests are not this one's.
        first = max(fetch["start"] - 1, start)
        moments = [m for m in (e["start"] for e in log) if first <= m <= fetch["end"]]
        span = (max(moments) - min(moments)) if moments else 0.0
        wall = end - start
        count = {
            job: sum(1 for m in jobs if row["start"] - 0.05 <= m <= row["end"] + 0.05)
            for job, row in stages.items()
        }
        stage_seconds = {job: row["seconds"] for job, row in stages.items()}
        if nested(stages):  # the pass ran inside updatedb: shown apart, not twice
            count["updatedb"] -= count["dedup"]
            stage_seconds["updatedb"] -= stage_seconds["dedup"]
        rounds.append(
            {
                "wall": round(wall, 1),
                "span": round(span, 1),
                "outside": round(wall - span, 1),
                "share": round((wall - span) / wall, 3) if wall else 0.0,
                "stages": {job: round(value, 1) for job, value in stage_seconds.items()},
                "jobs": count,
            }
        )
    return {
        "label": label,
        "seconds": round(seconds, 1),
        "start": round(pages[0] - began, 1) if pages else None,
        "requests": len(log),
        "rounds": rounds,
    }


def print_crawl(name: str, result: dict) -> None:
    print(
        f"\n{name} / {result['label']}: {result['seconds']} s, first page request at "
        f"{result['start']} s, {result['requests']} requests"
    )
    print("  round  wall  span  outside  share  " + "  ".join(f"{s:>8}" for s in STAGES))
    for number, r in enumerate(result["rounds"], 1):
        stages = "  ".join(
            f"{r['stages'].get(s, 0):4.1f}/{r['jobs'].get(s, 0):<3d}" for s in STAGES
        )
        print(
            f"  {number:5d} {r['wall']:5.1f} {r['span']:5.1f} {r['outside']:8.1f}"
            f" {r['share']:6.0%}  {stages}"
        )
    print("  (stage figures: seconds / Spark jobs)")


def warm_outside(result: dict) -> float:
    """Mean time outside the request span of the rounds after the first."""
    warm = result["rounds"][1:] or result["rounds"]
    return sum(r["outside"] for r in warm) / len(warm)


def warm_share(result: dict) -> float:
    warm = result["rounds"][1:] or result["rounds"]
    return sum(r["outside"] for r in warm) / sum(r["wall"] for r in warm)


def demo(root: Path, work: Path, label: str) -> float:
    folder = work / f"demo-{label}"
    folder.mkdir()
    return round(run_code(root, ["demo", "--data", str(folder / "data")], folder / "demo.log"), 1)


def doc_block(results: dict) -> str:
    """The benchmark's tables for docs/benchmarks.md."""
    lines = [f"<!-- {SECTION} -->", f"Run of {time.strftime('%Y-%m-%d %H:%M')}.", ""]
    for name in (n for n in results if n != "demo"):
        web = WEBS[name]
        lines += [
            f"**{name}**: {web['hosts']} hosts x {web['pages']} pages, fan-out "
            f"{web['fanout']}, delay {web['delay']:g} s, {web['rounds']} rounds",
            "",
            "| code | round | wall s | request span s | outside s | share | "
            + " | ".join(f"{stage} s / jobs" for stage in STAGES)
            + " |",
            "|---|---|---|---|---|---|" + "---|" * len(STAGES),
        ]
        for label, result in results[name].items():
            for number, r in enumerate(result["rounds"], 1):
                stages = " | ".join(
                    f"{r['stages'].get(s, 0):.1f} / {r['jobs'].get(s, 0)}" for s in STAGES
                )
                lines.append(
                    f"| {label} | {number} | {r['wall']} | {r['span']} | {r['outside']} | "
                    f"{r['share']:.0%} | {stages} |"
                )
        lines += ["", "| code | crawl s | first page request s | warm outside s | warm share |"]
        lines += ["|---|---|---|---|---|"]
        for label, result in results[name].items():
            lines.append(
                f"| {label} | {result['seconds']} | {result['start']} | "
                f"{warm_outside(result):.1f} | {warm_share(result):.0%} |"
            )
        lines.append("")
    if "demo" in results:
        demo_times = results["demo"]
        lines.append(
            f"`./submit.sh demo`: {demo_times['before']} s before, {demo_times['after']} s after."
        )
    lines.append(f"<!-- /{SECTION} -->")
    return "\n".join(lines)


def write_doc(results: dict) -> None:
    """Replace the benchmark's tables in docs/benchmarks.md (or add them)."""
    replace_block(SECTION, doc_block(results))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webs", nargs="+", default=list(WEBS), choices=list(WEBS))
    parser.add_argument("--baseline", default="0a28b07", help="the code before (a git revision)")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the crawls' folders")
    parser.add_argument("--write-doc", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--from-json", type=Path, help="print (and write) a saved run")
    args = parser.parse_args()
    if args.from_json:
        results = json.loads(args.from_json.read_text())
        summarize(results)
        if args.write_doc:
            write_doc(results)
        return 0
    work = Path(tempfile.mkdtemp(prefix="trawl-bench-rounds-"))
    results: dict = {}
    try:
        codes = {"before": baseline_checkout(work, args.baseline), "after": ROOT}
        for name in args.webs:
            for label, root in codes.items():
                result = crawl(root, work, label, name, WEBS[name])
                print_crawl(name, result)
                results.setdefault(name, {})[label] = result
        if not args.skip_demo:
            results["demo"] = {label: demo(root, work, label) for label, root in codes.items()}
        summarize(results)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        if args.write_doc:
            write_doc(results)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(work / "baseline")], cwd=ROOT)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept: {work}")
    return 0


def summarize(results: dict) -> None:
    print("\nside by side (warm rounds: 2 and later)")
    for name in (n for n in results if n != "demo"):
        before, after = results[name]["before"], results[name]["after"]
        for title, of in (
            ("crawl wall, s", lambda r: r["seconds"]),
            ("first page request, s", lambda r: r["start"]),
            ("warm round outside requests, s", warm_outside),
            ("warm round outside requests, share", warm_share),
        ):
            old, new = of(before), of(after)
            ratio = f"{new / old:.2f}" if old else "-"
            print(f"  {name:5s} {title:36s} {old:8.2f} -> {new:8.2f}  ({ratio})")
    if "demo" in results:
        old, new = results["demo"]["before"], results["demo"]["after"]
        print(f"  demo  wall, s{'':29s} {old:8.2f} -> {new:8.2f}  ({new / old:.2f})")


if __name__ == "__main__":
    sys.exit(main())
