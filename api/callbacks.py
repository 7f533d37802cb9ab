"""Callbacks: when every URL of a job is final, its ``callback_url`` gets one POST of the
job's status (JSON), retried with doubling delays up to ``api.callback.max.attempts``.

The target must pass the fetcher's address rules (``lib.fetching.resolver``: no loopback, private,
link-local ... unless ``fetcher.allow.private.networks``), so that the API cannot be
turned against the network it runs in. As in the fetcher, the rule is checked on the
address the socket connects to, so a name that resolves to an allowed address when
checked and to a refused one when called (DNS rebinding) is refused too.
A delivered or abandoned callback is recorded in ``api/callbacks`` and not sent again.
"""

from __future__ import annotations

import json
import threading
import time
from urllib.parse import urlsplit

from urllib3.exceptions import HTTPError

from lib.apijobs import retry_delay
from lib.fetching.guarded_pool import guarded_pool_manager
from lib.fetching.http import DEFAULT_PORTS, user_agent
from lib.fetching.resolver import AddressRefused, Resolver

CALLBACK_HOSTS_KEPT = 16  # callback hosts whose keep-alive connection is kept


class CallbackSender:
    """A daemon thread that delivers the callbacks of finished jobs."""

    def __init__(self, tables, conf, status_of):
        self.tables = tables
        self.conf = conf
        self.status_of = status_of
        self.attempts: dict[str, int] = {}
        self.next_try: dict[str, float] = {}
        self.resolver = Resolver(conf["fetcher.dns.ttl"], conf["fetcher.allow.private.networks"])
        self.pool = guarded_pool_manager(
            self.resolver,
            num_pools=CALLBACK_HOSTS_KEPT,
            timeout=conf["api.callback.timeout"],
            verify=conf["http.tls.verify"],
        )
        self.headers = {"User-Agent": user_agent(conf), "Content-Type": "application/json"}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="callbacks", daemon=True)

    def start(self) -> None:
        """Start sending."""
        self._thread.start()

    def stop(self) -> None:
        """Stop after the current round."""
        self._stop.set()
        self._thread.join(timeout=self.conf["api.callback.timeout"] + 5)

    def _loop(self) -> None:
        while not self._stop.wait(self.conf["api.callback.interval"]):
            try:
                self.deliver_due()
            except Exception as exc:  # noqa: BLE001 - keep serving; try again next round
                print(f"api: callbacks: {exc}", flush=True)

    def deliver_due(self) -> None:
        """One round: every finished job whose callback is still owed gets a try."""
        done = {r["job_id"] for r in self.tables.read("callbacks").to_pylist()}
        for job in self.tables.read("jobs").to_pylist():
            job_id = job["job_id"]
            if not job["callback_url"] or job_id in done:
                continue
            if time.monotonic() < self.next_try.get(job_id, 0.0):
                continue
            status = self.status_of(job)
            if status.status not in ("done", "cancelled"):
                continue
            self._try(job, status.model_dump(mode="json"))

    def _try(self, job: dict, payload: dict) -> None:
        job_id = job["job_id"]
        attempt = self.attempts.get(job_id, 0) + 1
        self.attempts[job_id] = attempt
        http_status, refused = None, self._refused(job["callback_url"])
        if refused is None:
            try:
                answer = self.pool.request(
                    "POST",
                    job["callback_url"],
                    body=json.dumps(payload).encode(),
                    headers=self.headers,
                    redirect=False,
                )
                http_status = answer.status
            except AddressRefused as exc:  # resolved to a refused address when called
                refused = str(exc)
            except (HTTPError, OSError):
                pass
        delivered = http_status is not None and 200 <= http_status < 300
        if delivered or refused or attempt >= self.conf["api.callback.max.attempts"]:
            self.tables.append(
                "callbacks",
                [
                    {
                        "job_id": job_id,
                        "sent": _now(),
                        "http_status": http_status,
                        "attempts": attempt,
                        "delivered": delivered,
                    }
                ],
            )
            if refused:
                print(f"api: callback of job {job_id} refused: {refused}", flush=True)
            return
        base, cap = self.conf["api.callback.retry.delay"], self.conf["api.callback.retry.max.delay"]
        self.next_try[job_id] = time.monotonic() + retry_delay(attempt, base, cap)

    def _refused(self, url: str) -> str | None:
        """Why the callback target may not be called, or None."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return f"{url}: not an http(s) URL"
        try:
            self.resolver.addresses(parts.hostname, parts.port or DEFAULT_PORTS[parts.scheme])
        except AddressRefused as exc:
            return str(exc)
        return None


def _now():
    from api.tables import now

    return now()
