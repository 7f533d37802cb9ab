"""A crawl beyond loopback names its agent: while ``http.agent.name`` or ``http.agent.url``
is left at the defaults file's placeholder, the fetch job refuses a fetch list with a
host beyond loopback (exit 2, naming the keys: tests/test_usage_errors.py), and the
fetcher's resolver refuses every address but loopback, before any connection."""

import socket
import time

import pytest

from lib.config import load_config
from lib.errors import UsageError
from lib.fetching.agent import is_loopback_host, require_named_agent, unnamed_keys
from lib.fetching.http import HttpClient
from lib.fetching.resolver import AddressRefused, Resolver
from lib.vocabulary import REASON_AGENT

NAMED = ["http.agent.name=TestBot", "http.agent.url=https://example.org/testbot"]


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.0.2.7", True),
        ("[::1]", True),
        ("localhost", True),
        ("shop.localhost", True),
        ("LOCALHOST.", True),
        ("10.0.0.1", False),
        ("192.168.1.1", False),
        ("example.org", False),
        ("localhost.example.org", False),
        ("[2001:db8::1]", False),
    ],
)
def test_loopback_hosts_are_told_by_their_name_or_address(host, loopback):
    assert is_loopback_host(host) is loopback


def test_the_keys_left_at_their_defaults_are_named():
    assert unnamed_keys(load_config().as_dict()) == ["http.agent.name", "http.agent.url"]
    assert unnamed_keys(load_config(overrides=NAMED[:1]).as_dict()) == ["http.agent.url"]
    assert unnamed_keys(load_config(overrides=NAMED).as_dict()) == []


def test_a_fetch_list_beyond_loopback_needs_a_named_agent():
    settings = load_config().as_dict()
    require_named_agent(settings, ["127.0.2.1", "localhost"])  # the tests' and demo's webs
    hosts = ["127.0.2.1", "a.example", "b.example", "c.example", "d.example", "e.example"]
    with pytest.raises(UsageError) as refused:
        require_named_agent(settings, hosts)
    message = str(refused.value)
    assert message.startswith("http.agent.name (now 'Trawl') and http.agent.url")
    assert "a.example, b.example, c.example and 2 more" in message
    require_named_agent(load_config(overrides=NAMED).as_dict(), hosts)


def recording_lookup(address: str, calls: list):
    def lookup(host, port, type=socket.SOCK_STREAM):
        calls.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    return lookup


def test_the_resolver_refuses_all_but_loopback_while_the_agent_is_unnamed():
    calls: list[str] = []
    public = Resolver(60, True, recording_lookup("203.0.113.7", calls), loopback_only=True)
    with pytest.raises(AddressRefused) as refused:
        public.addresses("agent-check.test", 80)
    assert refused.value.reason == REASON_AGENT and calls == ["agent-check.test"]
    local = Resolver(60, True, recording_lookup("127.0.2.1", calls), loopback_only=True)
    assert local.addresses("agent-check.test", 80)[0][4] == ("127.0.2.1", 80)
    named = Resolver(60, True, recording_lookup("203.0.113.7", calls), loopback_only=False)
    assert named.addresses("agent-check.test", 80)[0][4] == ("203.0.113.7", 80)


def test_an_unnamed_agent_s_request_beyond_loopback_is_never_sent():
    conf = load_config(overrides=["fetcher.allow.private.networks=true"])
    calls: list[str] = []
    # TEST-NET-3: a connection to it would hang until the connect timeout.
    resolver = Resolver(60, True, recording_lookup("203.0.113.7", calls), loopback_only=True)
    http = HttpClient(conf, 1, resolver)
    start = time.monotonic()
    exchange = http.get("http://agent-check.test/page")
    assert exchange.error == REASON_AGENT, exchange.error_detail
    assert exchange.peer is None and exchange.status is None  # no connection made
    assert time.monotonic() - start < conf["http.timeout"] / 1000 / 2
    assert calls == ["agent-check.test"]
    http.close()
