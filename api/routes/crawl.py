"""Crawl jobs: submit URLs, follow a job's status, read its pages, list and cancel jobs."""

import secrets
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Query

from api.auth import Caller
from api.job_views import as_json, equals, job_pages, job_state, job_urls, visible_job
from api.models import (
    NOT_FOUND,
    ContentResponse,
    JobsResponse,
    JobState,
    JobSummary,
    Rejected,
    StatusResponse,
    SubmitRequest,
    SubmitResponse,
)
from api.state import ApiState, api_state
from api.tables import metadata_text, now
from lib.apijobs import FETCHED, clean_urls, url_state

router = APIRouter(prefix="/api/v1/crawl")
State = Annotated[ApiState, Depends(api_state)]


@router.post(
    "/submit",
    response_model=SubmitResponse,
    status_code=201,
    responses={422: {"description": "malformed body or too many URLs"}},
)
def submit(body: SubmitRequest, owner: Caller, state: State) -> SubmitResponse:
    """A new job of ``body.urls``: the URLs kept (normalized) and those refused, why."""
    limit = state.conf["api.max.urls.per.job"]
    if len(body.urls) > limit:
        raise HTTPException(422, f"at most {limit} URLs per job")
    accepted, rejected = clean_urls(body.urls, state.url_filter)
    if body.callback_url is not None:
        callback, reason = clean_urls([body.callback_url], state.url_filter)
        if not callback:
            raise HTTPException(422, f"callback_url {body.callback_url!r}: {reason[0]['reason']}")
    job_id = secrets.token_hex(8)
    stamp = now()
    job = {
        "job_id": job_id,
        "owner": owner,
        "priority": body.priority,
        "callback_url": body.callback_url,
        "metadata": metadata_text(body.metadata),
        "created": stamp,
        "urls": len(accepted),
        "rejected": as_json(rejected),
    }
    state.tables.append("jobs", [job])
    if accepted:
        submitted = [
            {"job_id": job_id, "url": url, "priority": body.priority, "submitted": stamp}
            for url in accepted
        ]
        state.tables.append("submissions", submitted)
    return SubmitResponse(
        job_id=job_id,
        accepted=len(accepted),
        urls=accepted,
        rejected=[Rejected(**r) for r in rejected],
    )


@router.get("/{job_id}/status", response_model=StatusResponse, responses=NOT_FOUND)
def status(job_id: str, owner: Caller, state: State) -> StatusResponse:
    """The job's counts by URL state, its times, its callback."""
    return job_state(state.tables, visible_job(state.tables, job_id, owner))


@router.get("/{job_id}/content", response_model=ContentResponse, responses=NOT_FOUND)
def content(
    job_id: str,
    owner: Caller,
    state: State,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    format: Literal["json"] = "json",  # noqa: A002 - the documented parameter name
    raw: bool = False,
) -> ContentResponse:
    """One page (``api.page.size`` items) of the job's fetched pages, by URL."""
    tables = state.tables
    job = visible_job(tables, job_id, owner)
    urls = job_urls(tables, job_id)
    rows = tables.crawldb_rows(urls)
    fetched = sorted(
        u for u in urls if u in rows and url_state(rows[u]["status"], rows[u]["reason"]) == FETCHED
    )
    size = state.conf["api.page.size"]
    chosen = fetched[(page - 1) * size : page * size]
    items = job_pages(tables, [rows[u] for u in chosen], raw)
    return ContentResponse(
        job_id=job["job_id"], page=page, per_page=size, total=len(fetched), items=items
    )


@router.get("/jobs", response_model=JobsResponse)
def jobs(
    owner: Caller,
    state: State,
    status: JobState | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> JobsResponse:
    """The caller's jobs, newest first, with the given status if one is asked."""
    mine = state.tables.read("jobs", equals("owner", owner)).to_pylist()
    mine.sort(key=lambda j: (j["created"], j["job_id"]), reverse=True)
    listed = []
    for job in mine:
        current = job_state(state.tables, job)
        if status is None or current.status == status:
            listed.append(
                JobSummary(
                    job_id=job["job_id"],
                    status=current.status,
                    priority=job["priority"],
                    created=current.created,
                    urls=job["urls"],
                )
            )
        if len(listed) >= limit:
            break
    return JobsResponse(jobs=listed)


@router.delete("/{job_id}", response_model=StatusResponse, responses=NOT_FOUND)
def cancel(job_id: str, owner: Caller, state: State) -> StatusResponse:
    """Cancel the job: its URLs not fetched yet are not generated again."""
    tables = state.tables
    job = visible_job(tables, job_id, owner)
    if tables.read("cancelled", equals("job_id", job_id)).num_rows == 0:
        tables.append("cancelled", [{"job_id": job_id, "cancelled": now()}])
    return job_state(tables, job)
