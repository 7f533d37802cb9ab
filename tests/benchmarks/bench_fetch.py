"""Fetch benchmark: Trawl's whole crawl against the bare fetch-and-parse loop and Scrapy,
side by side in one run, counted the same way for every client.

Serves a local web of HOSTS hosts x PAGES pages (``python -m testweb``, its own process)
whose pages link in a tree (by default the smallest fan-out by which DEPTH levels of
links reach every page), then, ``--repeats`` times, one client after the other against
the same web:

- Trawl: ``./submit.sh crawl`` from the home pages at ``fetcher.server.delay=0``, as
  DEPTH+1 rounds (one a link level), and as one round that follows links to DEPTH levels
  inside the fetch tasks (``fetcher.follow.outlinks.depth``): the whole command, JVM
  start-up and every round included;
- the bare loop, the machine's limit for a crawler without crawl logic
  (``bare_parse.py``): aiohttp, one connection per host, each page's links found with
  lxml and made absolute, its body gzipped, one process per core, over the URLs of
  pages Trawl's first crawl asked;
- Scrapy (``scrapy_spider.py``, a CrawlSpider following every link, ROBOTSTXT_OBEY, one
  request per domain at a time, DEPTH_LIMIT=DEPTH) in three configurations: its stock
  settings; the settings of its own "Broad Crawls" guide; two spiders at once, each
  given half of the hosts (a user's way to use two cores).

Every client sends a User-Agent of its own, and its pages are the page paths the web's
log shows answered 200 to it, each once (robots.txt and sitemaps left out): the same
unit for all, whatever a client counts itself. CPU is that of every process of the client's tree
(``measure.py``: the PySpark workers included). Pages/s is over the client's whole wall
time. Each client's figure is the median of its runs, with their spread.

Run on demand: ``.venv/bin/python tests/benchmarks/bench_fetch.py [--hosts 500]
[--pages 60] [--depth 3] [--repeats 2] [--write-doc]`` (``pip install -e .[bench]``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PYTHON = sys.executable
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from doc_tables import replace_block  # noqa: E402

from lib.config import load_config  # noqa: E402

# The Scrapy guide's "Broad Crawls" settings (its politeness kept: one request a domain).
BROAD = {
    "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    "CONCURRENT_REQUESTS": "100",
    "REACTOR_THREADPOOL_MAXSIZE": "20",
    "COOKIES_ENABLED": "False",
    "RETRY_ENABLED": "False",
    "DOWNLOAD_TIMEOUT": "15",
    "REDIRECT_ENABLED": "False",
    "AJAXCRAWL_ENABLED": "True",
    "DEPTH_PRIORITY": "1",
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
}
CLIENTS = (
    "Trawl, DEPTH+1 rounds",
    "Trawl, 1 round following links",
    "bare fetch-and-parse loop",
    "Scrapy, stock",
    "Scrapy, broad-crawl settings",
    "Scrapy, two spiders",
)
TRAWL, BARE, SCRAPYS = CLIENTS[0], CLIENTS[2], CLIENTS[3:]


def agent(client: str, repeat: int) -> str:
    """The User-Agent a client's run sends: its requests in the web's log."""
    tag = "".join(word[0] for word in client.replace(",", "").split())
    return f"Bench{tag}{repeat} (+https://trawl.invalid/bench)"


def measured(work: Path, name: str, command: list[str], **kwargs) -> dict:
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


def start_web(work: Path, args, fanout: int) -> tuple[subprocess.Popen, list[str]]:
    command = [PYTHON, "-m", "testweb", "--log", str(work / "requests.jsonl"), "--subnet", "20"]
    command += ["--hosts", str(args.hosts), "--pages", str(args.pages), "--fanout", str(fanout)]
    command += ["--words", str(args.words), "--crawl-delay", "0"]
    web = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    return web, json.loads(web.stdout.readline())["seeds"]


def run_trawl(work: Path, seeds: Path, name: str, ua: str, args, follow: bool) -> dict:
    data = work / name
    command = [str(ROOT / "submit.sh"), "crawl", "--seeds", str(seeds), "--data", str(data)]
    command += ["--rounds", "1" if follow else str(args.depth + 1)]
    settings = [
        "fetcher.server.delay=0",
        "fetcher.allow.private.networks=true",
        f"http.agent.name={ua.split()[0]}",
        f"http.agent.url={ua.split()[1].strip('(+)')}",
    ]
    if follow:
        settings += [
            f"fetcher.follow.outlinks.depth={args.depth}",
            f"fetcher.follow.outlinks.depth.divisor={args.depth}",
            "fetcher.follow.outlinks.num.links=100",  # db.max.outlinks.per.page
        ]
    for setting in settings:
        command += ["--conf", setting]
    return measured(work, name, command)


def run_scrapy(work: Path, seeds: list[str], name: str, ua: str, args) -> dict:
    client = CLIENTS[3 + int(name.split("-")[1])]
    base = [PYTHON, "-m", "scrapy", "runspider", str(HERE / "scrapy_spider.py")]
    settings = {"DEPTH_LIMIT": str(args.depth), "LOG_LEVEL": "WARNING", "USER_AGENT": ua}
    if client == SCRAPYS[1]:
        settings |= BROAD
    options = [item for key, value in settings.items() for item in ("-s", f"{key}={value}")]
    shares = 2 if client == SCRAPYS[2] else 1
    commands = []
    for share in range(shares):
        mine = [s for s in seeds if zlib.crc32(s.encode()) % shares == share]
        (work / f"{name}-{share}.seeds").write_text("\n".join(mine) + "\n")
        commands.append([*base, "-a", f"seeds={work / f'{name}-{share}.seeds'}", *options])
    line = " & ".join(" ".join(f"'{part}'" for part in c) for c in commands) + " & wait"
    return measured(work, name, ["sh", "-c", line], cwd=work, stdout=subprocess.DEVNULL)


def run_bare(work: Path, name: str, ua: str, threads: int) -> dict:
    command = [PYTHON, str(HERE / "bare_parse.py"), str(work / "urls.txt"), str(threads)]
    command += [str(os.cpu_count()), ua]
    return measured(work, name, command, stdout=subprocess.DEVNULL)


def token(ua: str) -> str:
    """A User-Agent's product token (``agent``'s tag): what tells the clients apart."""
    return ua.split(" ")[0].split("/")[0]


def is_page(entry: dict) -> bool:
    """A 200 answer of a page (not robots.txt, not a sitemap)."""
    path = entry["path"]
    return entry["status"] == 200 and path != "/robots.txt" and "sitemap" not in path


def answers(work: Path) -> Counter:
    """User-Agent token -> the pages the web answered it 200, each page once (a client
    that asks a page again, as Scrapy does a start URL a link leads back to, gets no
    more)."""
    pages: set = set()
    with open(work / "requests.jsonl", encoding="utf-8") as handle:
        for line in handle:
            entry = json.loads(line)
            if is_page(entry):
                pages.add((token(entry["ua"]), entry["host"], entry["path"]))
    return Counter(client for client, _, _ in pages)


def page_urls(work: Path, ua: str, port: str) -> list[str]:
    """The page URLs a client asked (once each), in the order it asked them."""
    urls = {}
    with open(work / "requests.jsonl", encoding="utf-8") as handle:
        for line in handle:
            entry = json.loads(line)
            if token(entry["ua"]) == token(ua) and is_page(entry):
                urls[f"http://{entry['host']}:{port}{entry['path']}"] = None
    return list(urls)


def run_all(work: Path, args, seeds: list[str], seed_file: Path) -> dict[str, list[dict]]:
    """Every client ``args.repeats`` times: client -> its runs' figures (with ``ua``)."""
    threads = load_config()["fetcher.threads.fetch"]
    runs: dict[str, list[dict]] = {client: [] for client in CLIENTS}
    port = seeds[0].rsplit(":", 1)[1].strip("/")
    for repeat in range(args.repeats):
        for number, client in enumerate(CLIENTS):
            if client in SCRAPYS and args.skip_scrapy:
                continue
            ua, name = agent(client, repeat), f"c{number}-r{repeat}"
            if number < 2:
                figures = run_trawl(work, seed_file, name, ua, args, follow=number == 1)
            elif number == 2:
                figures = run_bare(work, name, ua, threads)
            else:
                figures = run_scrapy(work, seeds, f"s-{number - 3}-r{repeat}", ua, args)
            runs[client].append(figures | {"ua": ua})
            print(f"{client} #{repeat + 1}: {figures['seconds']:.1f} s", flush=True)
            if (repeat, number) == (0, 0):
                (work / "urls.txt").write_text("\n".join(page_urls(work, ua, port)) + "\n")
    return runs


def summary(runs: dict[str, list[dict]], counts: Counter) -> dict[str, dict]:
    """Client -> pages (median), pages/s (median, min, max), CPU ms a page, peak MB."""
    rows = {}
    for client, figures in runs.items():
        if not figures:
            continue
        pages = [counts[token(f["ua"])] for f in figures]
        rates = [p / f["seconds"] for p, f in zip(pages, figures, strict=True)]
        cpu = [1000 * f["cpu"] / p for p, f in zip(pages, figures, strict=True) if p]
        rows[client] = {
            "pages": statistics.median(pages),
            "seconds": statistics.median(f["seconds"] for f in figures),
            "rate": statistics.median(rates),
            "low": min(rates),
            "high": max(rates),
            "cpu_ms": statistics.median(cpu) if cpu else float("nan"),
            "peak_mb": max(f["peak_bytes"] for f in figures) / 2**20,
            "cpu_by_process": {
                kind: statistics.median(
                    1000 * f["cpu_by_process"].get(kind, 0.0) / p
                    for p, f in zip(pages, figures, strict=True)
                )
                for kind in figures[0]["cpu_by_process"]
            },
        }
    return rows


def table(rows: dict[str, dict], args, fanout: int) -> str:
    lines = [
        f"{args.hosts:,} hosts x {args.pages} pages of {args.words} words, fan-out {fanout}, "
        f"depth {args.depth}; {args.repeats} runs of each client, one after the other "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}).",
        "",
        "| client | pages (200) | seconds | pages/s (spread) | CPU ms/page | peak MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for client, row in rows.items():
        lines.append(
            f"| {client.replace('DEPTH+1', str(args.depth + 1))} | {row['pages']:,.0f} | "
            f"{row['seconds']:.1f} | {row['rate']:,.0f} ({row['low']:,.0f}-{row['high']:,.0f}) "
            f"| {row['cpu_ms']:.2f} | {row['peak_mb']:,.0f} |"
        )
    lines.append("")
    lines.append("CPU ms a page by process (the whole tree's, sampled):")
    lines.append("")
    for client, row in rows.items():
        kinds = sorted(row["cpu_by_process"].items(), key=lambda item: -item[1])
        shown = ", ".join(f"{kind} {ms:.2f}" for kind, ms in kinds if ms >= 0.01)
        lines.append(f"- {client.replace('DEPTH+1', str(args.depth + 1))}: {shown}")
    lines.append("")
    for trawl in CLIENTS[:2]:
        if trawl in rows and BARE in rows:
            mine, name = rows[trawl]["rate"], trawl.replace("DEPTH+1", str(args.depth + 1))
            line = f"{name}: **{mine / rows[BARE]['rate']:.2f}** of the bare loop's pages/s"
            line += " (target 0.6)"
            best = max((rows[s]["rate"] for s in SCRAPYS if s in rows), default=None)
            if best:
                line += f", **{mine / best:.2f}x** the best Scrapy configuration's (target 2.5)"
            lines.append(f"- {line}.")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--words", type=int, default=2500, help="words a page (2500: ~14 KB)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-scrapy", action="store_true")
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args()
    for module in ("aiohttp", "lxml", "psutil", *(() if args.skip_scrapy else ("scrapy",))):
        if importlib.util.find_spec(module) is None:
            parser.error(f"{module} is missing: .venv/bin/pip install -e .[bench]")
    work = Path(tempfile.mkdtemp(prefix="trawl-bench-fetch-"))
    fanout = fanout_for(args.pages, args.depth)
    web, seeds = start_web(work, args, fanout)
    seed_file = work / "seeds.txt"
    seed_file.write_text("\n".join(seeds) + "\n")
    try:
        runs = run_all(work, args, seeds, seed_file)
    finally:
        web.terminate()
        web.wait()
    text = table(summary(runs, answers(work)), args, fanout)
    print(text)
    if args.write_doc:
        key = f"bench_fetch: {args.hosts} hosts x {args.pages} pages"
        replace_block(key, f"<!-- {key} -->\n{text}<!-- /{key} -->")
    print(f"work directory: {work}")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
