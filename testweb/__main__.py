"""Run the test web until interrupted: ``python -m testweb --log FILE [--hosts N] ...``.

Prints one JSON line when ready: ``{"port": P, "seeds": [home page URLs]}``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from testweb.server import TestWeb, loopback_hosts


def main(argv: list[str] | None = None) -> int:
    """Serve the test web until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m testweb", description=__doc__)
    parser.add_argument("--log", required=True, type=Path, help="request log (JSON lines)")
    parser.add_argument("--hosts", type=int, default=4, help="number of hosts (default 4)")
    parser.add_argument("--subnet", type=int, default=1, help="hosts are 127.0.SUBNET.1...")
    parser.add_argument("--port", type=int, default=0, help="shared port (default: a free one)")
    parser.add_argument("--pages", type=int, default=8, help="pages per host (default 8)")
    parser.add_argument(
        "--fanout", type=int, default=0, help="tree links per page (default 0: none)"
    )
    parser.add_argument(
        "--words", type=int, default=800, help="words of text a page (default 800: ~4.5 KB)"
    )
    parser.add_argument(
        "--crawl-delay", type=float, default=1.5, help="Crawl-delay of host 1, seconds"
    )
    parser.add_argument(
        "--stragglers",
        type=int,
        default=0,
        help="the ring's last N hosts are stragglers: trickling, huge, flaky (default 0)",
    )
    parser.add_argument(
        "--trickle-s", type=float, default=20.0, help="the trickling page's time, seconds"
    )
    args = parser.parse_args(argv)
    web = TestWeb(
        loopback_hosts(args.hosts, args.subnet),
        args.port,
        args.log,
        pages_per_host=args.pages,
        fanout=args.fanout,
        words=args.words,
        crawl_delay=args.crawl_delay,
        stragglers=args.stragglers,
        trickle_s=args.trickle_s,
    ).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(json.dumps({"port": web.site.port, "seeds": web.seeds}), flush=True)
    stop.wait()
    web.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
