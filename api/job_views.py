"""What the API answers about a job: its status, its pages, its URLs."""

import base64
import json
from collections import defaultdict
from typing import Any

import pyarrow.compute as pc
from fastapi import HTTPException

from api.models import Page, StatusResponse
from api.tables import ApiTables
from api.warcread import read_payload
from lib.apijobs import job_status, url_state
from lib.storage import join


def visible_job(tables: ApiTables, job_id: str, owner: str) -> dict:
    """The job ``job_id`` of ``owner``; 404 when it does not exist or is another's."""
    rows = tables.read("jobs", equals("job_id", job_id)).to_pylist()
    if not rows or rows[0]["owner"] != owner:
        raise HTTPException(404, f"no job {job_id} for this API key")
    return rows[0]


def job_state(tables: ApiTables, job: dict) -> StatusResponse:
    """The status of a job from its URLs' crawldb rows, its cancellation and callback."""
    job_id = job["job_id"]
    urls = job_urls(tables, job_id)
    rows = tables.crawldb_rows(urls)
    cancelled = tables.read("cancelled", equals("job_id", job_id)).to_pylist()
    pairs = []
    for url in urls:
        row = rows.get(url) or {}
        state = url_state(row.get("status"), row.get("reason"), bool(cancelled))
        pairs.append((state, row.get("reason")))
    summary = job_status(pairs, bool(cancelled))
    fetch_times = [r["last_fetch_time"] for r in rows.values() if r["last_fetch_time"]]
    sent = tables.read("callbacks", equals("job_id", job_id)).to_pylist()
    return StatusResponse(
        job_id=job_id,
        priority=job["priority"],
        created=iso(job["created"]),
        first_fetch=iso(min(fetch_times)) if fetch_times else None,
        last_fetch=iso(max(fetch_times)) if fetch_times else None,
        cancelled=iso(cancelled[0]["cancelled"]) if cancelled else None,
        callback_sent=iso(sent[0]["sent"]) if sent and sent[0]["delivered"] else None,
        metadata=_load(job["metadata"]),
        **summary,
    )


def job_pages(tables: ApiTables, rows: list[dict], raw: bool) -> list[Page]:
    """The pages of crawldb ``rows``: text and outlinks from parse, the body from the
    WARC file when ``raw``."""
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
        if raw and (where := archived_at(tables, row, fetched.get(row["url"]))):
            body = base64.b64encode(read_payload(*where)).decode()
        items.append(
            Page(
                url=row["url"],
                status=row["status"],
                fetched_at=iso(row["last_fetch_time"]),
                title=row["title"],
                text=parse.get("text"),
                outlinks=[link["url"] for link in parse.get("outlinks") or []],
                body_base64=body,
            )
        )
    return items


def archived_at(tables: ApiTables, row: dict, fetched: dict | None) -> tuple[str, int] | None:
    """(WARC file, offset) of the record holding the page's current payload: the
    crawldb's capture, which a revisit (a 304, an identical payload) leaves in place;
    else, for a crawldb of an older Trawl, the last fetch's record."""
    if row.get("capture_segment") and row.get("warc_file"):
        folder = tables.data.segment(row["capture_segment"]).warc_dir
        return join(folder, row["warc_file"]), row["warc_offset"]
    if fetched and fetched["warc_file"]:
        folder = tables.data.segment(row["segment"]).warc_dir
        return join(folder, fetched["warc_file"]), fetched["warc_offset"]
    return None


def job_urls(tables: ApiTables, job_id: str) -> list[str]:
    """The URLs a job submitted."""
    return [r["url"] for r in tables.read("submissions", equals("job_id", job_id)).to_pylist()]


def equals(column: str, value: str):
    """A filter of rows whose ``column`` is ``value``."""
    return pc.field(column) == value


def iso(moment) -> str | None:
    """A timestamp as ISO 8601 in UTC (``Z``)."""
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def as_json(value: Any) -> str:
    """A value as JSON text, keys sorted."""
    return json.dumps(value, sort_keys=True)


def _load(text: str | None) -> Any:
    """JSON text as a value (None stays None)."""
    return None if text is None else json.loads(text)
