"""The crawl-job API (FastAPI): applications submit URLs, follow their status and read
their content; the batch crawler does the fetching (docs/operating.md, "Crawl-job API").

Every call needs ``Authorization: Bearer <key>`` with a key of ``api.keys``; a job is
visible only to the key that created it. Bodies over ``api.max.body.bytes`` get 413,
more than ``api.rate.limit`` calls a minute per key get 429 (with Retry-After), and
malformed bodies get 422 naming the field. ``/metrics`` (Prometheus' text format) and
``/dashboard`` (a page for a person, which also takes the key as ``?key=``) show the
crawl's health.
"""

from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from api.auth import RateLimiter, api_keys, owner_of
from api.callbacks import CallbackSender
from api.job_views import job_state
from api.models import ERRORS
from api.routes import crawl, health, stats
from api.state import ApiState
from api.tables import ApiTables
from engine.runtime.layout import DataDir
from engine.tables.health import Health
from lib.url.filter import UrlFilter


def create_app(root: str, conf) -> FastAPI:
    """The API over the data directory ``root`` with the settings ``conf``."""
    tables = ApiTables(DataDir.at(root, conf))
    sender = CallbackSender(tables, conf, status_of=lambda job: job_state(tables, job))

    crawl_health = Health(root)

    @asynccontextmanager
    async def lifespan(_app):
        sender.start()
        crawl_health.warm()  # the first scrape finds the figures read
        yield
        sender.stop()

    app = FastAPI(
        title="Trawl crawl-job API",
        version="1",
        description=__doc__,
        lifespan=lifespan,
        responses=ERRORS,
    )
    app.state.trawl = ApiState(
        tables=tables,
        conf=conf,
        keys={owner_of(key): key for key in api_keys(conf)},
        limiter=RateLimiter(conf["api.rate.limit"]),
        url_filter=UrlFilter(conf),
        health=crawl_health,
    )

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

    app.include_router(crawl.router)
    app.include_router(stats.router)
    app.include_router(health.router)
    return app
