"""demo: crawl the bundled test web for a few rounds and print the crawldb statistics.

Usage: ``submit.sh demo [--data DIR] [--rounds N] [--hosts N] [--port P]``. Starts the
local multi-host web (``testweb``) on loopback addresses 127.0.1.1 ..., writes a seed
file with its home pages, runs ``crawl``, prints ``readdb --stats``, stops the web. The
request log of the web is kept as ``DIR/requests.jsonl``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import DataDir
from engine.tables.store import read_crawldb
from jobs import crawl, readdb
from lib.config import Config
from testweb.server import TestWeb, loopback_hosts


def build_parser():
    """Command line of the job."""
    parser = job_parser("demo", __doc__.splitlines()[0])
    parser.set_defaults(data="data/demo")
    for action in parser._actions:
        if action.dest == "data":
            action.required = False
            action.help = "data directory (default: data/demo)"
    parser.add_argument("--rounds", type=int, default=3, help="crawl rounds (default 3)")
    parser.add_argument("--hosts", type=int, default=4, help="hosts of the test web (default 4)")
    parser.add_argument("--port", type=int, default=8808, help="port of the test web (8808)")
    return parser


def run(spark, conf, args) -> int:
    """Serve the test web, crawl it, print statistics."""
    # The demo web is on loopback addresses, which the fetcher refuses by default.
    conf = Config({**conf.as_dict(), "fetcher.allow.private.networks": True})
    root = Path(args.data).absolute()  # the demo is local: it writes its seeds beside
    data = DataDir.at(root, conf)
    root.mkdir(parents=True, exist_ok=True)
    web = TestWeb(loopback_hosts(args.hosts), args.port, root / "requests.jsonl").start()
    try:
        seeds = root / "seeds.txt"
        seeds.write_text("".join(f"{url}\n" for url in web.seeds), encoding="utf-8")
        crawl_args = SimpleNamespace(
            data=str(root), seeds=str(seeds), rounds=args.rounds, adddays=0.0
        )
        code = crawl.run(spark, conf, crawl_args)
    finally:
        web.stop()
    if code:
        return code
    figures = readdb.stats(read_crawldb(spark, data))
    figures["rejected"] = readdb.rejected_links(data)
    print(readdb.format_stats(figures))
    print(f"demo: data in {data.root}, request log in {Path(web.log.path)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("demo", build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
