"""Crawl statistics: the hosts and the registered domains with most URLs."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from api.auth import Caller
from api.models import DomainsResponse, DomainStats, HostsResponse, HostStats
from api.state import ApiState, api_state

router = APIRouter(prefix="/api/v1/stats")
Top = Annotated[int, Query(ge=1, le=1000)]


@router.get("/hosts", response_model=HostsResponse)
def hosts(
    owner: Caller, state: Annotated[ApiState, Depends(api_state)], top: Top = 10
) -> HostsResponse:
    """The ``top`` hosts by URLs in the crawldb, with their fetched pages."""
    return HostsResponse(hosts=[HostStats(**h) for h in state.tables.crawldb_sites(top, "host")])


@router.get("/domains", response_model=DomainsResponse)
def domains(
    owner: Caller, state: Annotated[ApiState, Depends(api_state)], top: Top = 10
) -> DomainsResponse:
    """The ``top`` registered domains by URLs in the crawldb, with their fetched pages
    and hosts."""
    sites = state.tables.crawldb_sites(top, "domain")
    return DomainsResponse(domains=[DomainStats(**d) for d in sites])
