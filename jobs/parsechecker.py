"""parsechecker: fetch and parse one URL now and show what the crawl would see (Nutch's
parsechecker), without Spark or a data directory.

Usage: ``submit.sh parsechecker [--conf KEY=VALUE ...] [--conf-file FILE] [--json] URL``.
The fetch is the crawler's own: its HTTP client, User-Agent and SSRF gate, its host's
robots.txt asked first and obeyed, the server's delay kept between the two requests,
redirects followed as a crawl follows them (each target normalized and filtered, up to
``http.redirect.max``). The page is parsed with the configured parsers and parse
filters. Printed: the final URL, its status and headers, content type, title, text
length, fingerprints, and every outlink with its anchor and whether it is admitted, or
why not (a URL filter's reason, ``nofollow``, ``outlink_limit``, ``external`` under
``db.ignore.external.links``). ``--json``: one JSON object (``url``, ``status``,
``headers``, ``content_type``, ``title``, ``text_length``, ``fingerprints``,
``outlinks``: ``{url, anchor, admitted, reason}``). Exit 0 when the page was fetched, 1
when robots.txt disallows it or no answer came, 2 on a mistake in what was given.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from lib import plugins
from lib.config import ConfigError, load_config
from lib.errors import UsageError
from lib.fetching.agent import require_named_agent, unnamed_keys
from lib.fetching.http import HttpClient
from lib.fetching.resolver import Resolver
from lib.fetching.robots import RobotsRules
from lib.fetching.robots_keeper import REDIRECTS, ROBOTS_MAX_HOPS
from lib.url.filter import UrlFilter, clean
from lib.url.normalize import host_of, resolve


def build_parser() -> argparse.ArgumentParser:
    """Command line of the tool."""
    parser = argparse.ArgumentParser(
        prog="submit.sh parsechecker", description=__doc__.splitlines()[0]
    )
    parser.add_argument("url", help="the URL to fetch and parse")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--conf-file", action="append", default=[], metavar="FILE")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


class Checker:
    """One URL fetched as the crawler fetches it: robots.txt first, politely."""

    def __init__(self, conf):
        self.conf = conf
        self.url_filter = UrlFilter(conf)
        resolver = Resolver(
            conf["fetcher.dns.ttl"],
            conf["fetcher.allow.private.networks"],
            loopback_only=bool(unnamed_keys(conf)),
        )
        self.http = HttpClient(conf, 1, resolver)
        self.rules: dict[str, RobotsRules] = {}
        self.last_request: dict[str, float] = {}

    def get(self, url: str):
        """An exchange, the host's delay kept since its last request."""
        host = host_of(url)
        if host in self.last_request:
            wait = self.conf["fetcher.server.delay"] - (time.monotonic() - self.last_request[host])
            time.sleep(max(wait, 0.0))
        exchange = self.http.get(url)
        self.last_request[host] = time.monotonic()
        return exchange

    def allowed(self, url: str) -> bool:
        """Whether the host's robots.txt lets the crawler fetch ``url``."""
        host = host_of(url)
        if host not in self.rules:
            self.rules[host] = self._robots(url)
        return self.rules[host].allowed(url)

    def _robots(self, url: str) -> RobotsRules:
        target = resolve("/robots.txt", url)
        for _ in range(ROBOTS_MAX_HOPS):
            exchange = self.get(target)
            location = exchange.header("location")
            if exchange.status not in REDIRECTS or not location:
                break
            target = resolve(location, target)
        agent, limit = self.conf["http.agent.name"], self.conf["robots.content.limit"]
        return RobotsRules.from_response(exchange.status, exchange.body, agent, limit)

    def fetch(self, url: str) -> tuple[str, object | None, str | None]:
        """``(final URL, exchange or None, why none)``: redirects followed."""
        for _ in range(self.conf["http.redirect.max"] + 1):
            if not self.allowed(url):
                return url, None, "robots_denied"
            exchange = self.get(url)
            location = exchange.header("location")
            if exchange.status not in REDIRECTS or not location:
                return url, exchange, exchange.error
            target, reason = clean(resolve(location, url) or location, self.url_filter)
            if target is None:
                return url, exchange, f"redirect_{reason}"
            url = target
        return url, None, "too_many_redirects"


def outlinks(conf, url: str, exchange, url_filter: UrlFilter) -> list[dict]:
    """Every outlink of the page with its anchor, and whether the crawl admits it."""
    from lib.content.parse import outlink_decisions
    from lib.url.domains import same_site

    listed, seen = [], set()
    headers = {k.lower(): v for k, v in exchange.response_headers}
    content_type = exchange.header("content-type")
    page = (url, exchange.body, content_type, headers)
    for link, reason in outlink_decisions(page, conf, url_filter):
        if reason is None and conf["db.ignore.external.links"]:
            mode = conf["db.ignore.external.links.mode"]
            reason = None if same_site(host_of(link.url), host_of(url), mode) else "external"
        if (link.url, reason) in seen:
            continue
        seen.add((link.url, reason))
        listed.append(
            {"url": link.url, "anchor": link.anchor, "admitted": reason is None, "reason": reason}
        )
    return listed


def report(conf, checker: Checker, url: str, exchange) -> dict:
    """The JSON object of a fetched page."""
    from lib.content.parse import PageParsers

    headers = {k.lower(): v for k, v in exchange.response_headers}
    content_type = exchange.header("content-type")
    parsed = PageParsers(conf).parse([(url, exchange.body, content_type, headers)])[0]
    return {
        "url": url,
        "status": exchange.status,
        "headers": dict(exchange.response_headers),
        "content_type": content_type,
        "parse_status": parsed.status,
        "title": parsed.title,
        "text_length": len(parsed.text or ""),
        "robots": parsed.robots,
        "canonical": parsed.canonical,
        "fingerprints": {
            "sha256": parsed.content_hash,
            "simhash": parsed.simhash,
            "minhash": parsed.minhash.hex() if parsed.minhash else None,
        },
        "outlinks": outlinks(conf, url, exchange, checker.url_filter),
    }


def printed(found: dict) -> str:
    """The report for a person."""
    lines = [f"{key}: {found[key]}" for key in ("url", "status", "content_type", "parse_status")]
    lines += [f"title: {found['title']}", f"text length: {found['text_length']}"]
    lines += [f"robots: {found['robots']}", f"canonical: {found['canonical']}"]
    lines += [f"{name}: {value}" for name, value in found["fingerprints"].items()]
    lines += ["headers:"] + [f"  {k}: {v}" for k, v in found["headers"].items()]
    lines.append(f"outlinks ({len(found['outlinks'])}):")
    for link in found["outlinks"]:
        verdict = "admitted" if link["admitted"] else f"refused ({link['reason']})"
        lines.append(f"  {verdict:<28} {link['url']}  anchor: {link['anchor']!r}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Fetch, parse, print; exit codes as the module's docstring says."""
    args = build_parser().parse_args(argv)
    try:
        conf = load_config(args.conf_file, args.conf)
        plugins.check(conf)
        url, reason = clean(args.url, UrlFilter(conf))
        if url is None:
            raise UsageError(f"{args.url} is not a URL the crawl would fetch ({reason})")
        require_named_agent(conf, [host_of(url)])
    except (ConfigError, UsageError) as exc:
        print(f"parsechecker: {exc}", file=sys.stderr)
        return 2
    checker = Checker(conf)
    final, exchange, why = checker.fetch(url)
    if exchange is None or exchange.status is None:
        found = {"url": final, "status": None, "reason": why}
        print(json.dumps(found) if args.json else f"{final}: not fetched ({why})")
        return 1
    found = report(conf, checker, final, exchange)
    print(json.dumps(found, indent=2) if args.json else printed(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
