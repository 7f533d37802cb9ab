"""``submit.sh parsechecker``: one URL fetched as the crawler fetches it (robots.txt
first, the server's delay kept, redirects followed) and parsed with the crawl's
parsers: its JSON lists exactly the page's links, each admitted as the crawl's parse
admits it; a URL robots.txt disallows is not asked."""

import json
import os
import subprocess

import lxml.html
import pytest
import requests
from conftest import ROOT, web_conf_args
from weblog import entries_for, host_delays, politeness_violations

from lib.config import load_config
from lib.content.parse import parse_page
from lib.url.normalize import resolve

pytestmark = pytest.mark.web
AGENT_URL = "https://trawl.invalid/test-parsechecker"


def parsechecker(url: str, *settings: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            str(ROOT / "submit.sh"),
            "parsechecker",
            "--json",
            *web_conf_args(AGENT_URL, *settings),
            url,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
        check=False,
    )


def page_links(url: str, body: bytes) -> set[str]:
    """The page's link targets, read with lxml alone and resolved as a browser would."""
    doc = lxml.html.fromstring(body)
    hrefs = [a.get("href") for a in doc.iter("a") if a.get("href") is not None]
    return {resolve(href, url) for href in hrefs}


def test_the_json_lists_exactly_the_page_s_links_as_the_crawl_admits_them(web):
    url = f"{web.site.base(0)}/page/3"
    own = f"urlfilter.hosts.allow={web.site.hosts[0]}"  # its links to the next host refused
    done = parsechecker(url, own)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    body = requests.get(url, timeout=30).content
    assert found["status"] == 200 and found["url"] == url and found["title"]
    assert {link["url"] for link in found["outlinks"]} == page_links(url, body)
    conf = load_config(overrides=["fetcher.allow.private.networks=true", own])
    kept = parse_page(url, body, found["content_type"], conf).outlinks
    admitted = [link for link in found["outlinks"] if link["admitted"]]
    assert [(link["url"], link["anchor"]) for link in admitted] == [(o.url, o.anchor) for o in kept]
    refused = [link for link in found["outlinks"] if not link["admitted"]]
    assert refused and {link["reason"] for link in refused} == {"host_denied"}
    assert found["fingerprints"]["sha256"] and found["text_length"] > 100
    asked = [e["path"] for e in sorted(entries_for(web, AGENT_URL), key=lambda e: e["start"])]
    assert asked[:2] == ["/robots.txt", "/page/3"]  # robots.txt first
    assert politeness_violations(entries_for(web, AGENT_URL), host_delays(web)) == []


def test_a_page_robots_txt_disallows_is_not_asked(web):
    url = f"{web.site.base(2)}/page/5"  # disallowed for Trawl on host 2
    before = len(entries_for(web, AGENT_URL))
    done = parsechecker(url)
    assert done.returncode == 1
    assert json.loads(done.stdout) == {"url": url, "status": None, "reason": "robots_denied"}
    paths = [e["path"] for e in entries_for(web, AGENT_URL)[before:]]
    assert "/page/5" not in paths and "/robots.txt" in paths


def test_a_url_beyond_loopback_with_the_default_agent_is_refused_before_any_request():
    done = subprocess.run(
        [str(ROOT / "submit.sh"), "parsechecker", "http://agent-check.test/"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("parsechecker: http.agent.name (now 'Trawl')")
