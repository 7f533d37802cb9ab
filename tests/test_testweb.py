"""The test web's shapes: the benchmark's tree of links and its page size."""

from __future__ import annotations

import re

from testweb.site import Site

HOST = "127.0.0.1"


def pages_within(site: Site, depth: int) -> set[int]:
    """The /page/k numbers of one host reachable from its home page in ``depth`` links."""
    seen: set[int] = set()
    frontier = ["/"]
    for _ in range(depth):
        found = []
        for path in frontier:
            body = site.respond(HOST, path).body.decode()
            for number in re.findall(r'href="\s*(?:\.\.)?/page/(\d+)\s*"', body):
                if int(number) not in seen:
                    seen.add(int(number))
                    found.append(f"/page/{number}")
        frontier = found
    return seen


def test_a_fanout_tree_reaches_every_page_in_as_many_levels_as_it_promises():
    site = Site((HOST,), 80, pages_per_host=50, fanout=4)
    assert pages_within(site, 1) == {1, 2, 3, 4}
    assert pages_within(site, 2) == set(range(1, 21))  # 4 + 16
    assert pages_within(site, 3) == set(range(1, 51))  # 4 + 16 + 64, cut at 50


def test_without_a_fanout_pages_are_one_level_deeper_each_time():
    site = Site((HOST,), 80, pages_per_host=50)
    assert pages_within(site, 1) == {1, 2}
    assert pages_within(site, 3) == {1, 2, 3, 4, 5, 6, 8}


def test_words_set_the_size_of_a_page():
    small = Site((HOST,), 80, pages_per_host=8).respond(HOST, "/page/3").body
    large = Site((HOST,), 80, pages_per_host=8, words=3600).respond(HOST, "/page/3").body
    assert 4_000 < len(small) < 5_000
    assert 17_000 < len(large) < 20_000


def test_stragglers_are_the_rings_last_hosts_in_turn():
    hosts = tuple(f"127.0.9.{i}" for i in range(1, 8))
    site = Site(hosts, 80, stragglers=3, trickle_s=3.0)
    assert [site.straggler(i) for i in range(7)] == [None] * 4 + ["trickle", "huge", "flaky"]
    trickle = site.respond(hosts[4], "/page/1")
    assert trickle.mode == "trickle" and abs((len(trickle.body) - 1) * 0.3 - 3.0) < 0.3
    assert site.respond(hosts[4], "/page/3").mode == "normal"
    huge = site.respond(hosts[5], "/page/1")
    assert huge.mode == "stream" and len(huge.body) > 12_000_000
    flaky = [site.respond(hosts[6], "/page/3", hit).status for hit in range(4)]
    assert flaky == [503, 200, 503, 200]
    assert site.respond(hosts[6], "/", 0).status == 200
