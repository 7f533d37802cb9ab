"""Proofs from the test web's request log: politeness and robots, as seen on the wire."""

from __future__ import annotations

from collections import defaultdict

from protego import Protego

from testweb.server import read_log

# The server stamps its clock; the crawler waits on its own. Both are this machine's
# clock, so only rounding separates them.
CLOCK_SLACK = 0.005


def entries_for(web, agent_url: str) -> list[dict]:
    """Log entries of requests whose User-Agent carries ``agent_url`` (one test's crawler)."""
    return [e for e in read_log(web.log.path) if agent_url in e["ua"]]


def by_host(entries: list[dict]) -> dict[str, list[dict]]:
    hosts: dict[str, list[dict]] = defaultdict(list)
    for entry in sorted(entries, key=lambda e: e["start"]):
        hosts[entry["host"]].append(entry)
    return hosts


def host_delays(web):
    """The delay each host of the test web asks for: the ring's host 1 has a Crawl-delay."""
    from conftest import TEST_CRAWL_DELAY, TEST_SERVER_DELAY

    return lambda host: TEST_CRAWL_DELAY if host == web.site.hosts[1] else TEST_SERVER_DELAY


def politeness_violations(entries: list[dict], delay_of) -> list[str]:
    """Pairs of requests to one host that overlap or come closer than the host's delay."""
    problems = []
    for host, requests in by_host(entries).items():
        for before, after in zip(requests, requests[1:], strict=False):
            gap = after["start"] - before["end"]
            if gap < delay_of(host) - CLOCK_SLACK:
                problems.append(
                    f"{host}: {before['path']} ended {before['end']:.3f}, "
                    f"{after['path']} started {after['start']:.3f} (gap {gap:.3f}s)"
                )
    return problems


def disallowed_requests(entries: list[dict], site, agent: str = "Trawl") -> list[str]:
    """Requests for paths that the host's robots.txt, as the site serves it, disallows.

    Decided with protego directly from the site's own robots.txt (404: all allowed), not
    through Trawl's robots code, so that a bug there cannot hide here.
    """
    rules = {}
    for host in site.hosts:
        answer = site.respond(host, "/robots.txt")
        rules[host] = Protego.parse(answer.body.decode()) if answer.status == 200 else None
    return [
        f"{e['host']}{e['path']}"
        for e in entries
        if rules[e["host"]] is not None
        and not rules[e["host"]].can_fetch(f"http://{e['host']}{e['path']}", agent)
    ]


def warc_page_responses(segment) -> list[str]:
    """Target URIs of the response records (robots.txt left out) of a segment's WARC files
    (local or on HDFS), read with their digests checked; any file that is not a finished
    WARC fails."""
    from warcio.archiveiterator import ArchiveIterator

    uris = []
    for name in segment.storage.list_files(segment.warc_dir):
        assert name.endswith(".warc.gz"), f"leftover file {name}"
        with segment.storage.open_read(f"{segment.warc_dir}/{name}") as handle:
            for record in ArchiveIterator(handle, check_digests="raise"):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type == "response" and not uri.endswith("/robots.txt"):
                    uris.append(uri)
    return uris
