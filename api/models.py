"""The request and response bodies of the crawl-job API (pydantic models; they make its
OpenAPI document)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Priority = Literal["high", "medium", "low"]
JobState = Literal["queued", "running", "done", "cancelled"]
MetadataValue = str | int | float | bool | None


class SubmitRequest(BaseModel):
    """A crawl job: URLs to fetch, how urgent, who to tell when done."""

    model_config = ConfigDict(extra="forbid")
    urls: list[str] = Field(min_length=1, description="absolute http(s) URLs")
    priority: Priority = "medium"
    callback_url: str | None = Field(None, description="POSTed the job's status when done")
    metadata: dict[str, MetadataValue] | None = None


class Rejected(BaseModel):
    """A submitted URL that will not be crawled, and why."""

    url: str
    reason: str


class SubmitResponse(BaseModel):
    """The new job."""

    job_id: str
    accepted: int
    urls: list[str]
    rejected: list[Rejected]


class StatusResponse(BaseModel):
    """Where a job stands."""

    job_id: str
    status: JobState
    priority: Priority
    urls: int
    counts: dict[str, int]
    failed_reasons: dict[str, int]
    created: str
    first_fetch: str | None
    last_fetch: str | None
    cancelled: str | None
    callback_sent: str | None
    metadata: dict[str, MetadataValue] | None = None


class Page(BaseModel):
    """One fetched page of a job."""

    url: str
    status: str
    fetched_at: str | None
    title: str | None
    text: str | None
    outlinks: list[str]
    body_base64: str | None = None


class ContentResponse(BaseModel):
    """One page of a job's fetched pages."""

    job_id: str
    page: int
    per_page: int
    total: int
    items: list[Page]


class JobSummary(BaseModel):
    """A job in the list of jobs."""

    job_id: str
    status: JobState
    priority: Priority
    created: str
    urls: int


class JobsResponse(BaseModel):
    """The caller's jobs, newest first."""

    jobs: list[JobSummary]


class HostStats(BaseModel):
    """A host of the crawldb."""

    host: str
    urls: int
    fetched: int


class HostsResponse(BaseModel):
    """The hosts with most URLs."""

    hosts: list[HostStats]


class DomainStats(BaseModel):
    """A registered domain of the crawldb (``example.co.uk`` for ``www.example.co.uk``;
    an IP address is its own)."""

    domain: str
    urls: int
    fetched: int
    hosts: int


class DomainsResponse(BaseModel):
    """The registered domains with most URLs."""

    domains: list[DomainStats]


class ErrorResponse(BaseModel):
    """A refused call."""

    detail: str


ERRORS = {
    401: {"model": ErrorResponse, "description": "no or unknown API key"},
    413: {"model": ErrorResponse, "description": "body too large"},
    429: {"model": ErrorResponse, "description": "too many calls"},
}
NOT_FOUND = {404: {"model": ErrorResponse, "description": "no such job for this key"}}
