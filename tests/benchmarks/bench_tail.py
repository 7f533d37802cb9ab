"""Round-tail benchmark (issue 35): a crawl among stragglers, before and after, side by side.

Serves a local web (``python -m testweb``, its own process) of HOSTS linked hosts whose
last STRAGGLERS play the test web's straggler roles in turn (a page trickling for
TRICKLE_S seconds, a 12 MB page cut at ``http.content.limit``, pages answering 503 every
other ask) among fast ones, and crawls it ROUNDS rounds with ``./submit.sh crawl`` at
``fetcher.server.delay=DELAY``: once with the code of BASELINE (a git worktree, run with
this checkout's .venv) and once with this checkout, each against a fresh web.

Prints, per round: the fetch job's wall time, the time by which 95% of its requests had
started (both from the fetch job's start, the requests from the web's request log), the
target (1.5 x the 95% point + 10 s), the URLs deferred; and for the whole crawl: wall
time, coverage (fetched share of the web's good pages: every ring page not disallowed),
politeness violations and URLs answered 200 twice.

Run on demand: ``.venv/bin/python tests/benchmarks/bench_tail.py [--hosts 60 ...]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(HERE)]

from doc_tables import replace_block  # noqa: E402
from weblog import politeness_violations  # noqa: E402

from testweb.server import read_log  # noqa: E402
from testweb.site import Site  # noqa: E402

PYTHON = sys.executable
AGENT = "https://trawl.invalid/bench-tail-{}".format
CRAWL_DELAY = 1.5  # the ring's host 1 asks for it


def start_web(work: Path, args) -> tuple[subprocess.Popen, dict]:
    command = [PYTHON, "-m", "testweb", "--log", str(work / "requests.jsonl")]
    options = {
        "--hosts": args.hosts,
        "--subnet": 30,
        "--pages": args.pages,
        "--fanout": args.fanout,
        "--crawl-delay": CRAWL_DELAY,
        "--stragglers": args.stragglers,
        "--trickle-s": args.trickle_s,
    }
    for name, value in options.items():
        command += [name, str(value)]
    web = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    return web, json.loads(web.stdout.readline())


def baseline_checkout(work: Path, revision: str) -> Path:
    """A worktree of ``revision`` that runs on this checkout's .venv."""
    tree = work / "baseline"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(tree), revision], cwd=ROOT, check=True
    )
    (tree / ".venv").symlink_to(ROOT / ".venv")
    return tree


def crawl(root: Path, work: Path, label: str, args) -> dict:
    """One crawl of a fresh web with the code at ``root``; its figures."""
    folder = work / label
    folder.mkdir()
    web, info = start_web(folder, args)
    try:
        seeds = folder / "seeds.txt"
        seeds.write_text("\n".join(info["seeds"]) + "\n")
        command = [str(root / "submit.sh"), "crawl", "--seeds", str(seeds)]
        command += ["--rounds", str(args.rounds), "--data", str(folder / "data")]
        for setting in (
            f"fetcher.server.delay={args.delay}",
            "fetcher.allow.private.networks=true",
            f"http.agent.url={AGENT(label)}",
        ):
            command += ["--conf", setting]
        # The code under test, not the checkout .venv's editable install points at: for
        # the driver by PYTHONPATH, for Spark's Python workers (python -m pyspark.daemon,
        # whose first path is the working directory) by the working directory.
        env = {**os.environ, "PYTHONPATH": str(root)}
        began = time.monotonic()
        with open(folder / "crawl.log", "w") as out:
            subprocess.run(
                command, stdout=out, stderr=subprocess.STDOUT, check=True, env=env, cwd=root
            )
        seconds = time.monotonic() - began
    finally:
        web.terminate()
        web.wait()
    return figures(folder, label, info["port"], seconds, args)


def fetch_rounds(data: Path) -> list[dict]:
    """The fetch jobs' rows of the metrics table, oldest first."""
    from deltalake import DeltaTable

    table = DeltaTable(str(data / "metrics")).to_pyarrow_table().to_pylist()
    rows = [r for r in table if r["job"] == "fetch"]
    return sorted(rows, key=lambda r: r["finished"])


def figures(folder: Path, label: str, port: int, seconds: float, args) -> dict:
    log = [e for e in read_log(folder / "requests.jsonl") if AGENT(label) in e["ua"]]
    rounds = []
    for row in fetch_rounds(folder / "data"):
        finished = row["finished"]
        end = (finished if finished.tzinfo else finished.replace(tzinfo=UTC)).timestamp()
        window = [e["start"] for e in log if end - row["seconds"] - 1 <= e["start"] <= end]
        # The job's start: its clock's, or its first request if that came sooner.
        begin = min([end - row["seconds"], *window])
        starts = sorted(moment - begin for moment in window)
        t95 = starts[math.ceil(0.95 * len(starts)) - 1] if starts else 0.0
        rounds.append(
            {
                "wall": round(end - begin, 1),
                "requests": len(starts),
                "t95": round(t95, 1),
                "target": round(1.5 * t95 + 10, 1),
                "deferred": int(dict(row["figures"]).get("deferred", 0)),
            }
        )
    hosts = tuple(f"127.0.{30 + i // 250}.{i % 250 + 1}" for i in range(args.hosts))
    site = Site(hosts, port, pages_per_host=args.pages, fanout=args.fanout)
    good = good_pages(site)
    fetched = fetched_urls(folder / "data")
    delays = {h: args.delay for h in hosts} | {hosts[1]: max(args.delay, CRAWL_DELAY)}
    answered = Counter((e["host"], e["path"]) for e in log if e["status"] == 200)
    return {
        "label": label,
        "seconds": round(seconds, 1),
        "rounds": rounds,
        "coverage": round(len(good & fetched) / len(good), 4),
        "good_pages": len(good),
        "politeness_violations": len(politeness_violations(log, delays.get)),
        "fetched_twice": sum(
            1 for path, n in answered.items() if n > 1 and path[1] != "/robots.txt"
        ),
    }


def good_pages(site: Site) -> set[str]:
    """Every ring page a polite crawler may fetch: home pages and /page/1..P, less what
    robots.txt disallows (host 2's /page/5 for Trawl)."""
    urls = set()
    for index in range(site.ring):
        base = site.base(index)
        urls.add(f"{base}/")
        urls.update(f"{base}/page/{k}" for k in range(1, site.pages_per_host + 1))
    urls.discard(f"{site.base(2)}/page/5")
    return urls


def fetched_urls(data: Path) -> set[str]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(data / "crawldb")).to_pyarrow_table(columns=["url", "status"]).to_pylist()
    return {r["url"] for r in rows if r["status"] in ("fetched", "notmodified", "duplicate")}


def print_crawl(result: dict) -> None:
    print(
        f"\n{result['label']}: {result['seconds']} s, coverage {result['coverage']:.2%}"
        f" of {result['good_pages']} good pages, {result['politeness_violations']}"
        f" politeness violations, {result['fetched_twice']} URLs answered 200 twice"
    )
    print(
        f"{'round':>5} {'wall s':>8} {'requests':>9} {'95% s':>7} {'target s':>9} {'deferred':>9}"
    )
    for number, entry in enumerate(result["rounds"], 1):
        mark = "" if entry["wall"] <= entry["target"] else "  over"
        print(
            f"{number:>5} {entry['wall']:>8} {entry['requests']:>9} {entry['t95']:>7} "
            f"{entry['target']:>9} {entry['deferred']:>9}{mark}"
        )


def doc_block(results: list[dict], args) -> tuple[str, str]:
    """The benchmark's table for docs/benchmarks.md, and the key of its web."""
    key = f"{args.hosts} hosts, {args.stragglers} stragglers, trickle {args.trickle_s:g} s, "
    key += f"{args.pages} pages, delay {args.delay:g} s, {args.rounds} rounds"
    lines = [f"<!-- bench_tail: {key} -->", f"**{key}** ({time.strftime('%Y-%m-%d %H:%M')})", ""]
    lines += ["| code | round | fetch wall s | requests | 95% point s | target s | deferred |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for result in results:
        for number, entry in enumerate(result["rounds"], 1):
            lines.append(
                f"| {result['label']} | {number} | {entry['wall']} | {entry['requests']} | "
                f"{entry['t95']} | {entry['target']} | {entry['deferred']} |"
            )
    lines += ["", "| code | whole crawl s | coverage | politeness violations | fetched twice |"]
    lines += ["|---|---|---|---|---|"]
    for result in results:
        lines.append(
            f"| {result['label']} | {result['seconds']} | {result['coverage']:.2%} of "
            f"{result['good_pages']} | {result['politeness_violations']} | "
            f"{result['fetched_twice']} |"
        )
    if len(results) == 2:
        ratio = results[1]["seconds"] / results[0]["seconds"]
        before, after = (sum(r["wall"] for r in result["rounds"]) for result in results)
        lines += [
            "",
            f"Whole crawl after / before: **{ratio:.2f}**; the fetch jobs alone: "
            f"{after:.1f} / {before:.1f} s = **{after / before:.2f}** (the rest is each "
            "round's fixed cost: JVM start, inject, generate, parse, updatedb).",
        ]
    lines.append(f"<!-- /bench_tail: {key} -->")
    return key, "\n".join(lines)


def write_doc(results: list[dict], args) -> None:
    """Replace this web's table in docs/benchmarks.md (or add it)."""
    key, block = doc_block(results, args)
    replace_block(f"bench_tail: {key}", block)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=60)
    parser.add_argument("--stragglers", type=int, default=6)
    parser.add_argument("--pages", type=int, default=15)
    parser.add_argument("--fanout", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.5, help="fetcher.server.delay")
    parser.add_argument("--trickle-s", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--baseline", default="3d5b5a0", help="the code before (a git revision)")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the crawls' folders")
    parser.add_argument(
        "--write-doc", action="store_true", help="put the table in docs/benchmarks.md"
    )
    parser.add_argument(
        "--from-json", type=Path, help="print (and --write-doc) the figures of an earlier run"
    )
    args = parser.parse_args()
    if args.from_json:
        results = json.loads(args.from_json.read_text())
        for result in results:
            print_crawl(result)
        if args.write_doc:
            write_doc(results, args)
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-tail-"))
    results = []
    try:
        if not args.skip_baseline:
            tree = baseline_checkout(work, args.baseline)
            results.append(crawl(tree, work, "before", args))
        results.append(crawl(ROOT, work, "after", args))
    finally:
        if not args.skip_baseline:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(work / "baseline")], cwd=ROOT
            )
    print(
        f"web: {args.hosts} hosts ({args.stragglers} stragglers, trickle {args.trickle_s} s), "
        f"{args.pages} pages each, delay {args.delay} s, {args.rounds} rounds"
    )
    for result in results:
        print_crawl(result)
    if len(results) == 2:
        before, after = results
        print(
            f"\nwhole crawl after / before: {after['seconds'] / before['seconds']:.2f}"
            f" (coverage {after['coverage']:.2%} against {before['coverage']:.2%})"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.write_doc:
        write_doc(results, args)
    if args.keep:
        print(f"crawls kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
