"""The crawl that scales against the crawl that is fast: the same crawl by the default
executors (a crawldb under ``db.driver.urls`` runs its rules in the driver) and forced
onto Spark's (``db.driver.urls=0``, ``crawl.dedup.driver.urls=0``: the path a crawldb
of millions of URLs takes on a cluster), side by side in one run, on two webs:

* ``wide``: 500 hosts x 60 pages of ~14 KB, fan-out 4, delay 0, 4 rounds (many hosts,
  no politeness wait: the rounds are CPU-bound);
* ``calm``: 20 hosts x 15 pages, fan-out 3, ``fetcher.server.delay=0.2``, 3 rounds.

Each crawl runs ``./submit.sh crawl`` of this checkout against a fresh web of its own.
Pages/s counts the web's 200 answers of pages (robots.txt, sitemaps and the soft-404
probe left out) over the crawl's wall time, start-up included. The two crawls' crawldbs
are compared URL by URL (the port left out: each web listens on a port of its own).

Run on demand: ``.venv/bin/python tests/benchmarks/bench_executors.py [--webs wide calm]
[--repeats N] [--write-doc]`` (``--write-doc``: its table in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(HERE)]

from bench_rounds import PYTHON, run_code  # noqa: E402
from doc_tables import replace_block  # noqa: E402

from testweb.server import read_log  # noqa: E402

SECTION = "bench_executors"
AGENT = "https://trawl.invalid/bench-executors-{}".format
WEBS = {
    "wide": {"hosts": 500, "pages": 60, "fanout": 4, "delay": 0.0, "rounds": 4, "subnet": 66},
    "calm": {"hosts": 20, "pages": 15, "fanout": 3, "delay": 0.2, "rounds": 3, "subnet": 68},
}
WORDS = 2500  # ~14 KB a page
WAYS = {"default": [], "spark": ["db.driver.urls=0", "crawl.dedup.driver.urls=0"]}
NOT_PAGES = re.compile(r"^/(robots\.txt|sitemap|trawl-probe-)")
PORT = re.compile(r"^(https?://[^/:]+):\d+")


def start_web(folder: Path, web: dict):
    """A fresh test web of its own process; the process and its ready line."""
    import json
    import subprocess

    command = [PYTHON, "-m", "testweb", "--log", str(folder / "requests.jsonl")]
    for name in ("hosts", "pages", "fanout", "subnet"):
        command += [f"--{name}", str(web[name])]
    command += ["--words", str(WORDS)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    return server, json.loads(server.stdout.readline())


def crawl(work: Path, name: str, way: str, repeat: int) -> dict:
    """One crawl of a fresh web, by ``way``'s executors; its figures."""
    web = WEBS[name]
    folder = work / f"{name}-{way}-{repeat}"
    folder.mkdir()
    server, info = start_web(folder, web)
    label = f"{name}-{way}-{repeat}"
    try:
        seeds = folder / "seeds.txt"
        seeds.write_text("\n".join(info["seeds"]) + "\n")
        command = ["crawl", "--seeds", str(seeds), "--rounds", str(web["rounds"])]
        command += ["--data", str(folder / "data")]
        settings = [
            f"fetcher.server.delay={web['delay']}",
            "fetcher.allow.private.networks=true",
            f"http.agent.url={AGENT(label)}",
            *WAYS[way],
        ]
        for setting in settings:
            command += ["--conf", setting]
        seconds = run_code(ROOT, command, folder / "crawl.log")
    finally:
        server.terminate()
        server.wait()
    log = [e for e in read_log(folder / "requests.jsonl") if AGENT(label) in e["ua"]]
    pages = sum(1 for e in log if e["status"] == 200 and not NOT_PAGES.match(e["path"]))
    return {"seconds": seconds, "pages": pages, "statuses": statuses(folder / "data")}


def statuses(data: Path) -> dict[str, str]:
    """URL (without its port) -> status, of a crawl's crawldb."""
    from deltalake import DeltaTable

    rows = DeltaTable(str(data / "crawldb")).to_pyarrow_table(columns=["url", "status"])
    found = rows.to_pydict()
    return {
        PORT.sub(r"\1", url): status
        for url, status in zip(found["url"], found["status"], strict=True)
    }


def agreement(a: dict, b: dict) -> float:
    """The share of the URLs of either crawldb that both hold with the same status."""
    urls = set(a) | set(b)
    return sum(1 for url in urls if a.get(url) == b.get(url)) / len(urls) if urls else 1.0


def compare(work: Path, name: str, repeats: int) -> dict:
    """The web's crawls, alternating the ways; the ratios of each pair."""
    runs = {way: [] for way in WAYS}
    for repeat in range(repeats):
        for way in WAYS:
            runs[way].append(crawl(work, name, way, repeat))
            print(name, way, repeat, {k: v for k, v in runs[way][-1].items() if k != "statuses"})
    rate = {way: [r["pages"] / r["seconds"] for r in runs[way]] for way in WAYS}
    ratios = [s / d for s, d in zip(rate["spark"], rate["default"], strict=True)]
    walls = [
        s["seconds"] / d["seconds"] for s, d in zip(runs["spark"], runs["default"], strict=True)
    ]
    agreed = [
        agreement(s["statuses"], d["statuses"])
        for s, d in zip(runs["spark"], runs["default"], strict=True)
    ]
    return {
        "web": name,
        "default": statistics.median(rate["default"]),
        "spark": statistics.median(rate["spark"]),
        "pages": statistics.median(r["pages"] for r in runs["default"]),
        "ratio": statistics.median(ratios),
        "ratio_spread": (min(ratios), max(ratios)),
        "wall_ratio": statistics.median(walls),
        "agreement": min(agreed),
    }


def table(results: list[dict]) -> list[str]:
    lines = [
        "| web | pages (200) | default pages/s | Spark's pages/s | Spark / default (spread) "
        "| Spark's wall / default | crawldbs agree |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        low, high = r["ratio_spread"]
        lines.append(
            f"| {r['web']} | {r['pages']:,.0f} | {r['default']:.0f} | {r['spark']:.0f} "
            f"| {r['ratio']:.2f} ({low:.2f}-{high:.2f}) | {r['wall_ratio']:.2f} "
            f"| {100 * r['agreement']:.1f} % |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webs", nargs="+", default=list(WEBS), choices=list(WEBS))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--write-doc", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument(
        "--keep", action="store_true", help="keep the crawls' data directories and logs"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="trawl-bench-executors-"))
    try:
        results = [compare(work, name, args.repeats) for name in args.webs]
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    lines = table(results)
    print("\n".join(lines))
    if args.write_doc:
        stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
        head = f"`bench_executors.py --repeats {args.repeats}`, run {stamp} UTC:"
        replace_block(
            SECTION, "\n".join([f"<!-- {SECTION} -->", head, "", *lines, f"<!-- /{SECTION} -->"])
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
