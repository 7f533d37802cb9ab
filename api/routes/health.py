"""The crawl's health: ``/metrics`` for Prometheus, ``/dashboard`` for a person."""

from pathlib import Path
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, Response

from api.auth import Caller, PageCaller
from api.dashboard import page
from api.state import ApiState, api_state
from engine.tables.prometheus import exposition

router = APIRouter()
State = Annotated[ApiState, Depends(api_state)]
STATIC = Path(__file__).resolve().parent.parent / "static" / "uplot"
SERVED = {"uPlot.iife.min.js": "text/javascript", "uPlot.min.css": "text/css"}
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


@router.get("/metrics", response_class=Response)
def metrics(owner: Caller, state: State) -> Response:
    """The crawl's figures in Prometheus' text format (families ``trawl_*``)."""
    return Response(exposition(state.health.figures()), media_type=PROMETHEUS_TEXT)


@router.get("/dashboard", response_class=HTMLResponse)
def dashboard(owner: PageCaller, state: State, key: str | None = None) -> HTMLResponse:
    """The operator's page; it reloads itself."""
    query = f"?key={quote(key)}" if key else ""
    refresh = state.conf["api.dashboard.refresh"]
    html = page(state.health.figures(), str(state.tables.data.root), refresh, query)
    return HTMLResponse(html)


@router.get("/dashboard/{name}")
def dashboard_file(owner: PageCaller, name: str) -> FileResponse:
    """The chart library the page loads (uPlot), served here: no CDN."""
    if name not in SERVED:
        raise HTTPException(404, f"no file {name}")
    return FileResponse(STATIC / name, media_type=SERVED[name])
