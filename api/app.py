"""The crawl-job API (FastAPI): applications submit URLs, follow their status and read
their content; the batch crawler does the fetching (README, "Crawl-job API").

Every call needs ``Authorization: Bearer <key>`` with a key of ``api.keys``; a job is
visible only to the key that created it. Bodies over ``api.max.body.bytes`` get 413,
more than ``api.rate.limit`` calls a minute per key get 429 (with Retry-After), and
malformed bodies get 422 naming the field.
"""

import base64
import hashlib
import json
import secrets
import threading
import time
from collections import defaultdict, deque
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

import pyarrow.compute as pc
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.callbacks import CallbackSender
from api.models import (
    ERRORS,
    NOT_FOUND,
    ContentResponse,
    DomainsResponse,
    DomainStats,
    JobsResponse,
    JobState,
    JobSummary,
    Page,
    Rejected,
    StatusResponse,
    SubmitRequest,
    SubmitResponse,
)
from api.tables import ApiTables, metadata_text, now
from api.warcread import read_payload
from lib.apijobs import FETCHED, clean_urls, job_status, url_state
from lib.urlfilter import UrlFilter


class RateLimiter:
    """At most ``limit`` calls per key in any 60 s window."""

    def __init__(self, limit: int):
        self.limit = limit
        self.calls: dict[str, deque] = defaultdict(deque)
        self.lock = threading.Lock()

    def wait_time(self, owner: str) -> float:
        """0 when the call may go, else the seconds until it may."""
        moment = time.monotonic()
        with self.lock:
            calls = self.calls[owner]
            while calls and moment - calls[0] >= 60:
                calls.popleft()
            if len(calls) >= self.limit:
                return 60 - (moment - calls[0])
            calls.append(moment)
            return 0.0


def owner_of(key: str) -> str:
    """The owner id stored with a job: a hash of the key, never the key itself."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def create_app(root: str, conf) -> FastAPI:
    """The API over the data directory ``root`` with the settings ``conf``."""
    tables = ApiTables(root)
    keys = {owner_of(key): key for key in conf["api.keys"]}
    limiter = RateLimiter(conf["api.rate.limit"])
    url_filter = UrlFilter(conf)
    sender = CallbackSender(tables, conf, status_of=lambda job: _status(tables, job))

    @asynccontextmanager
    async def lifespan(_app):
        sender.start()
        yield
        sender.stop()

    app = FastAPI(
        title="Trawl crawl-job API",
        version="1",
        description=__doc__,
        lifespan=lifespan,
        responses=ERRORS,
    )
    bearer = HTTPBearer(auto_error=False)

    @app.middleware("http")
    async def limit_body(request: Request, call_next):
        if request.method in ("POST", "PUT", "PATCH"):
            length = request.headers.get("content-length")
            if length is None:
                return JSONResponse({"detail": "a Content-Length header is required"}, 411)
            if not length.isdigit() or int(length) > conf["api.max.body.bytes"]:
                limit = conf["api.max.body.bytes"]
                return JSONResponse({"detail": f"body over {limit} bytes"}, 413)
        return await call_next(request)

    def caller(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> str:
        key = credentials.credentials if credentials else ""
        owner = owner_of(key)
        if not key or owner not in keys or not secrets.compare_digest(keys[owner], key):
            raise HTTPException(
                401,
                "an API key is required: Authorization: Bearer <key>",
                headers={"WWW-Authenticate": "Bearer"},
            )
        wait = limiter.wait_time(owner)
        if wait:
            raise HTTPException(
                429,
                f"over {limiter.limit} calls a minute",
                headers={"Retry-After": str(int(wait) + 1)},
            )
        return owner

    Caller = Annotated[str, Depends(caller)]

    def visible_job(job_id: str, owner: str) -> dict:
        rows = tables.read("jobs", _equals("job_id", job_id)).to_pylist()
        if not rows or rows[0]["owner"] != owner:
            raise HTTPException(404, f"no job {job_id} for this API key")
        return rows[0]

    @app.post(
        "/api/v1/crawl/submit",
        response_model=SubmitResponse,
        status_code=201,
        responses={422: {"description": "malformed body or too many URLs"}},
    )
    def submit(body: SubmitRequest, owner: Caller) -> SubmitResponse:
        if len(body.urls) > conf["api.max.urls.per.job"]:
            raise HTTPException(422, f"at most {conf['api.max.urls.per.job']} URLs per job")
        accepted, rejected = clean_urls(body.urls, url_filter)
        if body.callback_url is not None:
            callback, reason = clean_urls([body.callback_url], url_filter)
            if not callback:
                raise HTTPException(
                    422, f"callback_url {body.callback_url!r}: {reason[0]['reason']}"
                )
        job_id = secrets.token_hex(8)
        stamp = now()
        tables.append(
            "jobs",
            [
                {
                    "job_id": job_id,
                    "owner": owner,
                    "priority": body.priority,
                    "callback_url": body.callback_url,
                    "metadata": metadata_text(body.metadata),
                    "created": stamp,
                    "urls": len(accepted),
                    "rejected": _json(rejected),
                }
            ],
        )
        if accepted:
            tables.append(
                "submissions",
                [
                    {"job_id": job_id, "url": url, "priority": body.priority, "submitted": stamp}
                    for url in accepted
                ],
            )
        return SubmitResponse(
            job_id=job_id,
            accepted=len(accepted),
            urls=accepted,
            rejected=[Rejected(**r) for r in rejected],
        )

    @app.get("/api/v1/crawl/{job_id}/status", response_model=StatusResponse, responses=NOT_FOUND)
    def status(job_id: str, owner: Caller) -> StatusResponse:
        return _status(tables, visible_job(job_id, owner))

    @app.get("/api/v1/crawl/{job_id}/content", response_model=ContentResponse, responses=NOT_FOUND)
    def content(
        job_id: str,
        owner: Caller,
        page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
        format: Literal["json"] = "json",  # noqa: A002 - the documented parameter name
        raw: bool = False,
    ) -> ContentResponse:
        job = visible_job(job_id, owner)
        urls = _job_urls(tables, job_id)
        rows = tables.crawldb_rows(urls)
        fetched = sorted(
            u
            for u in urls
            if u in rows and url_state(rows[u]["status"], rows[u]["reason"]) == FETCHED
        )
        size = conf["api.page.size"]
        chosen = fetched[(page - 1) * size : page * size]
        items = _pages(tables, [rows[u] for u in chosen], raw)
        return ContentResponse(
            job_id=job["job_id"], page=page, per_page=size, total=len(fetched), items=items
        )

    @app.get("/api/v1/crawl/jobs", response_model=JobsResponse)
    def jobs(
        owner: Caller,
        status: JobState | None = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    ) -> JobsResponse:
        mine = tables.read("jobs", _equals("owner", owner)).to_pylist()
        mine.sort(key=lambda j: (j["created"], j["job_id"]), reverse=True)
        listed = []
        for job in mine:
            state = _status(tables, job)
            if status is None or state.status == status:
                listed.append(
                    JobSummary(
                        job_id=job["job_id"],
                        status=state.status,
                        priority=job["priority"],
                        created=state.created,
                        urls=job["urls"],
                    )
                )
            if len(listed) >= limit:
                break
        return JobsResponse(jobs=listed)

    @app.delete("/api/v1/crawl/{job_id}", response_model=StatusResponse, responses=NOT_FOUND)
    def cancel(job_id: str, owner: Caller) -> StatusResponse:
        job = visible_job(job_id, owner)
        if tables.read("cancelled", _equals("job_id", job_id)).num_rows == 0:
            tables.append("cancelled", [{"job_id": job_id, "cancelled": now()}])
        return _status(tables, job)

    @app.get("/api/v1/stats/domains", response_model=DomainsResponse)
    def domains(owner: Caller, top: Annotated[int, Query(ge=1, le=1000)] = 10) -> DomainsResponse:
        return DomainsResponse(domains=[DomainStats(**d) for d in tables.crawldb_hosts(top)])

    return app


def _status(tables: ApiTables, job: dict) -> StatusResponse:
    job_id = job["job_id"]
    urls = _job_urls(tables, job_id)
    rows = tables.crawldb_rows(urls)
    cancelled = tables.read("cancelled", _equals("job_id", job_id)).to_pylist()
    pairs = []
    for url in urls:
        row = rows.get(url) or {}
        state = url_state(row.get("status"), row.get("reason"), bool(cancelled))
        pairs.append((state, row.get("reason")))
    summary = job_status(pairs, bool(cancelled))
    fetch_times = [r["last_fetch_time"] for r in rows.values() if r["last_fetch_time"]]
    sent = tables.read("callbacks", _equals("job_id", job_id)).to_pylist()
    return StatusResponse(
        job_id=job_id,
        priority=job["priority"],
        created=_iso(job["created"]),
        first_fetch=_iso(min(fetch_times)) if fetch_times else None,
        last_fetch=_iso(max(fetch_times)) if fetch_times else None,
        cancelled=_iso(cancelled[0]["cancelled"]) if cancelled else None,
        callback_sent=_iso(sent[0]["sent"]) if sent and sent[0]["delivered"] else None,
        metadata=_load(job["metadata"]),
        **summary,
    )


def _pages(tables: ApiTables, rows: list[dict], raw: bool) -> list[Page]:
    by_segment: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        by_segment[row["segment"]].append(row["url"])
    parsed, fetched = {}, {}
    for segment, urls in by_segment.items():
        parsed.update(tables.segment_rows(segment, "parse", urls, ["url", "text", "outlinks"]))
        if raw:
            columns = ["url", "warc_file", "warc_offset"]
            fetched.update(tables.segment_rows(segment, "fetch", urls, columns))
    items = []
    for row in rows:
        parse = parsed.get(row["url"]) or {}
        body = None
        where = fetched.get(row["url"])
        if raw and where and where["warc_file"]:
            folder = f"{tables.root}/segments/{row['segment']}/warc/{where['warc_file']}"
            body = base64.b64encode(read_payload(folder, where["warc_offset"])).decode()
        items.append(
            Page(
                url=row["url"],
                status=row["status"],
                fetched_at=_iso(row["last_fetch_time"]),
                title=row["title"],
                text=parse.get("text"),
                outlinks=[link["url"] for link in parse.get("outlinks") or []],
                body_base64=body,
            )
        )
    return items


def _job_urls(tables: ApiTables, job_id: str) -> list[str]:
    return [r["url"] for r in tables.read("submissions", _equals("job_id", job_id)).to_pylist()]


def _equals(column: str, value: str):
    return pc.field(column) == value


def _iso(moment) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)
