"""What the API's routes share: the tables, the settings, the keys and the URL filter."""

from dataclasses import dataclass
from typing import Any

from fastapi import Request

from api.tables import ApiTables
from lib.url.filter import UrlFilter


@dataclass
class ApiState:
    """One per application (``app.state.trawl``)."""

    tables: ApiTables
    conf: Any
    keys: dict[str, str]  # owner id -> key
    limiter: Any  # api.auth.RateLimiter
    url_filter: UrlFilter
    health: Any  # engine.tables.health.Health: the figures of /metrics and /dashboard


def api_state(request: Request) -> ApiState:
    """The application's state, as a route dependency."""
    return request.app.state.trawl
