"""Fetch benchmark (issue 3): Trawl against a bare fetch loop and Scrapy, side by side.

Serves a local web of HOSTS hosts x PAGES pages (``python -m testweb``, its own process),
whose pages also link in a tree of FANOUT links a page (by default the smallest fan-out by
which DEPTH levels of links reach every page, so that the crawl fetches the whole web),
then, one after the other against the same web:

1. Trawl: ``./submit.sh crawl`` from the home pages, ``fetcher.server.delay=0``, twice:
   DEPTH+1 rounds (depth 0..DEPTH, one round per link level), then one round that
   follows links to DEPTH levels inside the fetch tasks (``fetcher.follow.outlinks.depth``,
   with a link budget no page of this web exceeds); figures for the whole crawl (JVM
   start-up and every round included) and for the fetch stage alone (the fetch jobs' own
   timings); both count Trawl's requests from the web's log, robots.txt left out (the
   bare loop's work);
2. three bare fetch loops over exactly the URLs the round-per-level crawl fetched (one
   connection per host, no parsing, no storage): on urllib3 and threads
   (``bare_fetch.py``), on libcurl and threads, Trawl's own HTTP stack
   (``bare_pycurl.py``), and on aiohttp and asyncio, the loop the issue's orientation
   figures were measured with (``bare_aiohttp.py``); and Trawl's fetcher
   over the same URLs in one process without Spark (robots.txt, politeness, WARC):
   ``core_fetch.py``;
3. Scrapy: a stock CrawlSpider, ROBOTSTXT_OBEY, one request per domain at a time,
   DEPTH_LIMIT=DEPTH: ``scrapy_spider.py`` (``pip install -e .[bench]``).

This machine's speed changes by 2x within minutes (a shared VM), so the aiohttp loop also
runs right after each Trawl crawl, over the same URLs: the fetch stages are compared with
the loop run next to them as well, and the spread of the loop's runs says how much the
machine moved during the benchmark.

Prints pages, seconds, pages/s, CPU seconds per page and peak memory of each, and the
ratios. Run on demand: ``.venv/bin/python tests/benchmarks/bench_fetch.py [--hosts 500]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from lib.config import load_config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PYTHON = sys.executable


def measured(name: str, work: Path, command: list[str], **kwargs) -> dict:
    out = work / f"{name}.figures.json"
    subprocess.run(
        [PYTHON, str(HERE / "measure.py"), str(out), "--", *command], check=True, **kwargs
    )
    return json.loads(out.read_text())


def fanout_for(pages: int, depth: int) -> int:
    """The smallest F with F + F^2 + ... + F^depth >= pages."""
    fanout = 1
    while sum(fanout**level for level in range(1, depth + 1)) < pages:
        fanout += 1
    return fanout


def start_web(
    work: Path, hosts: int, pages: int, fanout: int, words: int
) -> tuple[subprocess.Popen, list[str]]:
    web = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "testweb",
            "--log",
            str(work / "requests.jsonl"),
            "--hosts",
            str(hosts),
            "--subnet",
            "20",
            "--pages",
            str(pages),
            "--fanout",
            str(fanout),
            "--words",
            str(words),
            "--crawl-delay",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    info = json.loads(web.stdout.readline())
    return web, info["seeds"]


AGENT = "https://trawl.invalid/bench-{}".format


def run_trawl(work: Path, seeds: Path, label: str, rounds: int, threads: int, *settings) -> dict:
    """One Trawl crawl with a User-Agent URL of its own (``AGENT(label)``)."""
    data = work / f"trawl-{label}"
    command = [str(ROOT / "submit.sh"), "crawl", "--seeds", str(seeds), "--data", str(data)]
    command += ["--rounds", str(rounds)]
    for setting in (
        "fetcher.server.delay=0",
        "fetcher.allow.private.networks=true",
        f"fetcher.threads.fetch={threads}",
        f"http.agent.url={AGENT(label)}",
        *settings,
    ):
        command += ["--conf", setting]
    figures = measured(f"trawl-{label}", work, command)
    fetch_seconds = fetch_pages = 0.0
    for marker in sorted(data.glob("segments/*/_fetched.done")):
        summary = json.loads(marker.read_text())
        fetch_seconds += summary["seconds"]
        fetch_pages += summary["urls"]
    figures["fetch_stage"] = {"pages": fetch_pages, "seconds": fetch_seconds}
    return figures


def trawl_urls(work: Path, label: str) -> list[str]:
    urls = []
    with open(work / "requests.jsonl", encoding="utf-8") as handle:
        for line in handle:
            entry = json.loads(line)
            if AGENT(label) in entry["ua"] and entry["path"] != "/robots.txt":
                urls.append(f"http://{entry['host']}:{PORT[0]}{entry['path']}")
    return urls


PORT = [0]
# The bare loops, all over the URLs the round-per-level crawl requested: urllib3 and
# threads, libcurl and threads (Trawl's own HTTP stack), aiohttp and asyncio (the loop
# the orientation figures were taken with).
BARE_LOOPS = (
    ("bare", "bare_fetch.py"),
    ("pycurl", "bare_pycurl.py"),
    ("aiohttp", "bare_aiohttp.py"),
)
BARE_LABELS = {
    "bare": "bare fetch loop",
    "pycurl": "bare pycurl loop",
    "aiohttp": "bare aiohttp loop",
}


# The aiohttp loop run right after each Trawl crawl.
ADJACENT = ("bare aiohttp loop, next to rounds", "bare aiohttp loop, next to follow")


def bare_loop(work: Path, name: str, threads: int) -> dict:
    """One bare loop (``name``: a BARE_LOOPS name, or ``aiohttp-N``) over urls.txt."""
    script = dict(BARE_LOOPS)[name.split("-")[0]]
    out = work / f"{name}.json"
    command = [PYTHON, str(HERE / script), str(work / "urls.txt"), str(threads)]
    figures = measured(name, work, command, stdout=open(out, "w"))
    return json.loads(out.read_text()) | {"peak_bytes": figures["peak_bytes"]}


def report(name: str, pages: float, figures: dict) -> dict:
    rate = pages / figures["seconds"] if figures["seconds"] else 0.0
    cpu = figures.get("cpu")
    row = {
        "name": name,
        "pages": int(pages),
        "seconds": round(figures["seconds"], 1),
        "pages_per_s": round(rate, 1),
        "cpu_ms_per_page": round(1000 * cpu / pages, 2) if cpu and pages else None,
        "peak_mb": round(figures["peak_bytes"] / 2**20) if "peak_bytes" in figures else None,
    }
    print(
        f"{name:<28} {row['pages']:>7} pages {row['seconds']:>8} s {row['pages_per_s']:>9} "
        f"pages/s  cpu {row['cpu_ms_per_page']} ms/page  peak {row['peak_mb']} MB"
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument(
        "--fanout", type=int, help="tree links a page (default: enough to reach every page)"
    )
    parser.add_argument(
        "--words", type=int, default=800, help="words of text a page (800: ~4.5 KB)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=load_config()["fetcher.threads.fetch"],
        help="fetcher.threads.fetch, and the bare loops' concurrency (default: its default)",
    )
    parser.add_argument("--skip-scrapy", action="store_true")
    args = parser.parse_args()
    # Found out now, not after the Trawl crawls have run for many minutes.
    if importlib.util.find_spec("aiohttp") is None:
        parser.error("aiohttp is missing: .venv/bin/pip install -e .[bench]")
    if not args.skip_scrapy and importlib.util.find_spec("scrapy") is None:
        parser.error("Scrapy is missing: .venv/bin/pip install -e .[bench] (or --skip-scrapy)")
    work = Path(tempfile.mkdtemp(prefix="trawl-bench-"))
    fanout = fanout_for(args.pages, args.depth) if args.fanout is None else args.fanout
    print(
        f"web: {args.hosts} hosts x {args.pages} pages of {args.words} words, "
        f"fan-out {fanout}, depth {args.depth}"
    )
    web, seeds = start_web(work, args.hosts, args.pages, fanout, args.words)
    PORT[0] = seeds[0].rsplit(":", 1)[1].strip("/")
    seed_file = work / "seeds.txt"
    seed_file.write_text("\n".join(seeds) + "\n")
    rows = []
    try:
        # Every request Trawl made was made by a fetch stage: the fetch lists' URLs plus
        # the sitemap and soft-404 probes, redirect hops and followed links. The bare
        # loop is given exactly the round-per-level crawl's requests.
        trawl = run_trawl(work, seed_file, "rounds", args.depth + 1, args.threads)
        urls = trawl_urls(work, "rounds")
        rows.append(report("trawl crawl (whole)", len(urls), trawl))
        rows.append(report("trawl fetch stage", len(urls), trawl["fetch_stage"]))
        (work / "urls.txt").write_text("\n".join(urls) + "\n")
        rows.append(report(ADJACENT[0], len(urls), bare_loop(work, "aiohttp-1", args.threads)))
        follow = run_trawl(
            work,
            seed_file,
            "follow",
            1,
            args.threads,
            f"fetcher.follow.outlinks.depth={args.depth}",
            f"fetcher.follow.outlinks.depth.divisor={args.depth}",
            "fetcher.follow.outlinks.num.links=100",  # db.max.outlinks.per.page
        )
        followed = trawl_urls(work, "follow")
        rows.append(report("trawl 1 round, follow", len(followed), follow))
        rows.append(report("trawl follow fetch stage", len(followed), follow["fetch_stage"]))
        rows.append(report(ADJACENT[1], len(urls), bare_loop(work, "aiohttp-2", args.threads)))
        print(f"requests (no robots.txt): {len(urls)} in rounds, {len(followed)} following")
        bare_loops = {name: bare_loop(work, name, args.threads) for name, _ in BARE_LOOPS}
        core_out = work / "core.json"
        core = measured(
            "core",
            work,
            [
                PYTHON,
                str(HERE / "core_fetch.py"),
                str(work / "urls.txt"),
                str(args.threads),
                str(work / "core.warc.gz"),
            ],
            stdout=open(core_out, "w"),
            cwd=ROOT,
        )
        core_self = json.loads(core_out.read_text())
        rows.append(
            report(
                "trawl fetcher without spark",
                core_self["pages"],
                core_self | {"peak_bytes": core["peak_bytes"]},
            )
        )
        for name, _script in BARE_LOOPS:
            rows.append(report(BARE_LABELS[name], bare_loops[name]["pages"], bare_loops[name]))
        if not args.skip_scrapy:
            scrapy_out = work / "scrapy.json"
            scrapy = measured(
                "scrapy",
                work,
                [
                    PYTHON,
                    "-m",
                    "scrapy",
                    "runspider",
                    str(HERE / "scrapy_spider.py"),
                    "-a",
                    f"seeds={seed_file}",
                    "-s",
                    f"DEPTH_LIMIT={args.depth}",
                    "-s",
                    "LOG_LEVEL=WARNING",
                ],
                stdout=open(scrapy_out, "w"),
                cwd=work,
            )
            scrapy_pages = json.loads(scrapy_out.read_text().strip().splitlines()[-1])["pages"]
            rows.append(report("scrapy crawl", scrapy_pages, scrapy))
    finally:
        web.terminate()
        web.wait()
    by_name = {row["name"]: row for row in rows}

    def ratio(a: str, b: str) -> float:
        return by_name[a]["pages_per_s"] / by_name[b]["pages_per_s"]

    for stage in ("trawl fetch stage", "trawl follow fetch stage"):
        for loop in BARE_LABELS.values():
            print(f"ratio {stage} / {loop}, pages/s: {ratio(stage, loop):.2f}")
    stages = ("trawl fetch stage", "trawl follow fetch stage")
    for stage, loop in zip(stages, ADJACENT, strict=True):
        print(f"ratio {stage} / {loop}, pages/s: {ratio(stage, loop):.2f}")
    aiohttp_rates = [by_name[name]["pages_per_s"] for name in (*ADJACENT, "bare aiohttp loop")]
    print(
        "the aiohttp loop's runs, pages/s: "
        + ", ".join(f"{rate:.0f}" for rate in aiohttp_rates)
        + f" (the machine moved by {max(aiohttp_rates) / min(aiohttp_rates):.2f}x)"
    )
    core_vs_bare = ratio("trawl fetcher without spark", "bare fetch loop")
    print(f"ratio trawl fetcher without spark / bare loop, pages/s: {core_vs_bare:.2f}")
    if "scrapy crawl" in by_name:
        for crawl in ("trawl crawl (whole)", "trawl 1 round, follow"):
            print(f"ratio {crawl} / scrapy, pages/s: {ratio(crawl, 'scrapy crawl'):.2f}")
    print(f"work directory: {work}")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
