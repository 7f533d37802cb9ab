"""Crawl statistics: the hosts with most URLs."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from api.auth import Caller
from api.models import DomainsResponse, DomainStats
from api.state import ApiState, api_state

router = APIRouter(prefix="/api/v1/stats")


@router.get("/domains", response_model=DomainsResponse)
def domains(
    owner: Caller,
    state: Annotated[ApiState, Depends(api_state)],
    top: Annotated[int, Query(ge=1, le=1000)] = 10,
) -> DomainsResponse:
    """The ``top`` hosts by URLs in the crawldb, with their fetched pages."""
    return DomainsResponse(domains=[DomainStats(**d) for d in state.tables.crawldb_hosts(top)])
