"""The crawl-job API, served for real (``./submit.sh api`` in its own process, uvicorn on
loopback) over a data directory that a real crawl round (``./submit.sh crawl``) then
works on: submit, status, content, callback, cancel, refusals, and a property-based run
of its OpenAPI document (schemathesis) that must find no server error."""

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
import schemathesis
from conftest import ROOT
from crawlruns import AGENT, run_to_end, web_crawl_args
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from servers import api_server
from weblog import entries_for

pytestmark = [pytest.mark.spark, pytest.mark.web, pytest.mark.api]
KEY, OTHER_KEY = "key-one-" + "a" * 24, "key-two-" + "b" * 24
BODY_LIMIT = 20000


class Receiver(BaseHTTPRequestHandler):
    """The application's callback endpoint: keeps what it is sent."""

    received: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def callbacks():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/done", Receiver.received
    server.shutdown()


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """``(base URL, data directory)`` of a running API server."""
    data = tmp_path_factory.mktemp("api") / "data"
    # The keys as the docs advise: one in a file, one in the environment.
    keys = data.parent / "api-keys"
    keys.write_text(f"# the test's keys\n{KEY}\n\n")
    keys.chmod(0o600)
    settings = (
        f"api.keys.file={keys}",
        "fetcher.allow.private.networks=true",
        "api.callback.interval=0.5",
        "api.callback.retry.delay=0.5",
        f"api.max.body.bytes={BODY_LIMIT}",
    )
    log = data.parent / "api.log"
    with api_server(data, log, *settings, env={"TRAWL_API_KEYS": OTHER_KEY}) as base:
        yield base, data


def call(method, url, key=KEY, headers=None, **kwargs):
    sent = {**(headers or {}), **({"Authorization": f"Bearer {key}"} if key else {})}
    return requests.request(method, url, headers=sent, timeout=30, **kwargs)


def test_a_job_is_crawled_its_status_content_and_callback(api, web, callbacks):
    base, data = api
    target, received = callbacks
    pages = [f"{web.site.base(0)}/page/1", f"{web.site.base(0)}/page/2"]
    submitted = call(
        "POST",
        f"{base}/api/v1/crawl/submit",
        json={
            "urls": [*pages, pages[0] + "#again", "not a url", "ftp://example.com/x"],
            "priority": "high",
            "callback_url": target,
            "metadata": {"customer": "acme"},
        },
    )
    assert submitted.status_code == 201, submitted.text
    job = submitted.json()
    assert job["urls"] == pages and job["accepted"] == 2
    assert sorted(r["url"] for r in job["rejected"]) == ["ftp://example.com/x", "not a url"]
    assert all(r["reason"] for r in job["rejected"])

    other = call(
        "POST",
        f"{base}/api/v1/crawl/submit",
        json={"urls": [f"{web.site.base(1)}/page/3"], "priority": "low"},
    ).json()
    cancelled = call("DELETE", f"{base}/api/v1/crawl/{other['job_id']}").json()
    assert cancelled["status"] == "cancelled" and cancelled["cancelled"]

    status = call("GET", f"{base}/api/v1/crawl/{job['job_id']}/status").json()
    assert status["status"] == "queued" and status["counts"]["queued"] == 2
    assert status["metadata"] == {"customer": "acme"}
    assert call("GET", f"{base}/api/v1/crawl/{job['job_id']}/status", OTHER_KEY).status_code == 404

    agent = AGENT("api")
    args = web_crawl_args(data, agent, "db.max.depth=0")
    run_to_end(
        [str(ROOT / "submit.sh"), "crawl", "--rounds", "1", *args], data.parent / "crawl.txt"
    )

    status = call("GET", f"{base}/api/v1/crawl/{job['job_id']}/status").json()
    assert status["status"] == "done", status
    assert status["counts"]["fetched"] == 2 and status["first_fetch"] and status["last_fetch"]
    content = call(
        "GET",
        f"{base}/api/v1/crawl/{job['job_id']}/content",
        params={"page": 1, "format": "json", "raw": "true"},
    ).json()
    assert content["total"] == 2 and [p["url"] for p in content["items"]] == pages
    for page in content["items"]:
        assert page["title"] and page["text"] and page["outlinks"]
        assert page["title"].encode() in base64.b64decode(page["body_base64"])
    requested = {e["path"] for e in entries_for(web, agent)}
    assert {"/page/1", "/page/2"} <= requested
    assert "/page/3" not in requested  # the cancelled job's URL was not generated

    deadline = time.monotonic() + 30
    while not received and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [c["job_id"] for c in received] == [job["job_id"]]
    assert received[0]["status"] == "done" and received[0]["counts"]["fetched"] == 2
    status = call("GET", f"{base}/api/v1/crawl/{job['job_id']}/status").json()
    assert status["callback_sent"]

    listed = call("GET", f"{base}/api/v1/crawl/jobs").json()["jobs"]
    assert {(j["job_id"], j["status"]) for j in listed} == {
        (job["job_id"], "done"),
        (other["job_id"], "cancelled"),
    }
    done = call("GET", f"{base}/api/v1/crawl/jobs", params={"status": "done"}).json()["jobs"]
    assert [j["job_id"] for j in done] == [job["job_id"]]
    assert call("GET", f"{base}/api/v1/crawl/jobs", OTHER_KEY).json()["jobs"] == []
    hosts = call("GET", f"{base}/api/v1/stats/hosts", params={"top": 1}).json()["hosts"]
    assert len(hosts) == 1 and hosts[0]["fetched"] >= 2
    domains = call("GET", f"{base}/api/v1/stats/domains", params={"top": 50}).json()["domains"]
    # The test web's hosts are IP addresses: each its own registered domain.
    assert {d["domain"]: (d["urls"], d["hosts"]) for d in domains} == {
        h["host"]: (h["urls"], 1)
        for h in call("GET", f"{base}/api/v1/stats/hosts", params={"top": 50}).json()["hosts"]
    }


def test_unauthorised_and_malformed_calls_are_refused(api):
    base, _ = api
    submit = f"{base}/api/v1/crawl/submit"
    assert call("GET", f"{base}/api/v1/crawl/jobs", key=None).status_code == 401
    assert call("GET", f"{base}/api/v1/crawl/jobs", key="wrong").status_code == 401
    not_json = call("POST", submit, data=b"{urls:", headers={"Content-Type": "application/json"})
    assert not_json.status_code == 422
    for body in (
        {},
        {"urls": []},
        {"urls": ["http://a.test/"], "priority": "urgent"},
        {"urls": ["http://a.test/"], "extra": 1},
        {"urls": "http://a.test/"},
    ):
        refused = call("POST", submit, json=body)
        assert refused.status_code == 422, body
        assert refused.json()["detail"]
    big = call("POST", submit, json={"urls": ["http://a.test/" + "x" * 100] * 300})
    assert big.status_code == 413 and str(BODY_LIMIT) in big.json()["detail"]
    assert call("GET", f"{base}/api/v1/crawl/nosuchjob/status").status_code == 404


def test_the_served_openapi_document_is_the_one_in_the_repository(api):
    base, _ = api
    served = requests.get(f"{base}/openapi.json", timeout=10).json()
    assert served == json.loads((ROOT / "api" / "openapi.json").read_text())


def test_no_generated_request_makes_the_server_fail(api):
    """Every operation of the served OpenAPI document, with requests generated from it
    (schemathesis on hypothesis, valid and invalid): never a 5xx."""
    base, _ = api
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 10
    tried = []
    for operation in operations:
        property_test(operation, tried)()
    assert len(set(tried)) == 10


def property_test(operation, tried: list):
    """A hypothesis test calling one operation with generated requests."""

    @given(case=operation.as_strategy())
    @settings(
        max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    def no_server_error(case):
        case.call_and_validate(
            headers={"Authorization": f"Bearer {KEY}"}, checks=[not_a_server_error], timeout=30
        )
        tried.append(operation.label)

    return no_server_error
