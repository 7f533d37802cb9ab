"""The API's Delta tables under ``DIR/api/`` and its reads of the crawl's own tables,
through delta-rs (the ``deltalake`` package: no JVM in the API process).

Every table has one writer, so the API and the Spark jobs never race on a commit:

* ``api/jobs``        (API, append) one row per job: id, owner, priority, callback, ...
* ``api/submissions`` (API, append) one row per job URL, normalized
* ``api/cancelled``   (API, append) one row per cancelled job
* ``api/callbacks``   (API, append) one row per callback delivered or given up
* ``api/injected``    (Spark, written by generate) job URLs merged into the crawldb

Pending submissions are the submitted URLs of jobs not cancelled that are not in
``api/injected``; generate injects them before it selects URLs (``engine.executors.submissions``).
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import TableNotFoundError

from engine.runtime.layout import DataDir
from lib.url.domains import registered_domain

TIME = pa.timestamp("us", tz="UTC")
SCHEMAS = {
    "jobs": pa.schema(
        [
            ("job_id", pa.string()),
            ("owner", pa.string()),  # SHA-256 of the API key that created it (prefix)
            ("priority", pa.string()),
            ("callback_url", pa.string()),
            ("metadata", pa.string()),  # JSON text, as given
            ("created", TIME),
            ("urls", pa.int64()),
            ("rejected", pa.string()),  # JSON list of {"url", "reason"}
        ]
    ),
    "submissions": pa.schema(
        [
            ("job_id", pa.string()),
            ("url", pa.string()),
            ("priority", pa.string()),
            ("submitted", TIME),
        ]
    ),
    "cancelled": pa.schema([("job_id", pa.string()), ("cancelled", TIME)]),
    "callbacks": pa.schema(
        [
            ("job_id", pa.string()),
            ("sent", TIME),
            ("http_status", pa.int64()),  # the callback target's answer, NULL if none
            ("attempts", pa.int64()),
            ("delivered", pa.bool_()),
        ]
    ),
}
CRAWLDB_COLUMNS = ["url", "host", "status", "reason", "last_fetch_time", "title", "segment"]
# Where the page's current payload is archived (a crawldb of an older Trawl may lack them).
CAPTURE_COLUMNS = ["capture_segment", "warc_file", "warc_offset"]


def now() -> datetime:
    """The current time, for the tables' timestamps."""
    return datetime.fromtimestamp(time.time(), tz=UTC)


class ApiTables:
    """Reads and appends of the API's tables and reads of the crawl's."""

    def __init__(self, data: DataDir):
        self.data = data
        self._lock = threading.Lock()  # one commit at a time from this process

    def append(self, name: str, rows: list[dict]) -> None:
        """Append rows to one of the API's tables (created on first use)."""
        table = pa.Table.from_pylist(rows, schema=SCHEMAS[name])
        with self._lock:
            write_deltalake(self.data.api_table(name), table, mode="append")

    def read(self, name: str, filters=None) -> pa.Table:
        """One of the API's tables (empty when it does not exist yet)."""
        return read_delta(self.data.api_table(name), SCHEMAS[name], filters)

    def crawldb_rows(self, urls: list[str]) -> dict[str, dict]:
        """The crawldb rows of ``urls``, by URL."""
        if not urls:
            return {}
        try:
            dataset = DeltaTable(self.data.crawldb).to_pyarrow_dataset()
        except (TableNotFoundError, FileNotFoundError):
            return {}
        present = [c for c in CAPTURE_COLUMNS if c in dataset.schema.names]
        table = dataset.to_table(
            columns=CRAWLDB_COLUMNS + present, filter=pc.field("url").isin(urls)
        )
        return {row["url"]: row for row in table.to_pylist()}

    def crawldb_sites(self, top: int, by: str) -> list[dict]:
        """The ``top`` sites with most URLs in the crawldb, with fetched pages and hosts:
        ``by`` ``host``, or ``domain`` (a host's registered domain)."""
        table = read_delta(self.data.crawldb, None, None, ["host", "status"])
        if table.num_rows == 0:
            return []
        fetched = pc.cast(pc.equal(table["status"], "fetched"), pa.int64())
        table = table.append_column("fetched", fetched)
        if by == "domain":
            hosts = pc.unique(table["host"]).to_pylist()
            domains = pa.array([registered_domain(host) for host in hosts])
            index = pc.index_in(table["host"], value_set=pa.array(hosts))
            table = table.append_column("domain", pc.take(domains, index))
        counted = (
            table.group_by(by)
            .aggregate([("fetched", "count"), ("fetched", "sum"), ("host", "count_distinct")])
            .sort_by([("fetched_count", "descending"), (by, "ascending")])
            .slice(0, top)
        )
        return [
            {by: r[by], "urls": r["fetched_count"], "fetched": r["fetched_sum"]}
            | ({"hosts": r["host_count_distinct"]} if by == "domain" else {})
            for r in counted.to_pylist()
        ]

    def segment_rows(self, segment: str, table: str, urls: list[str], columns: list[str]):
        """Rows of a segment's table for ``urls``, by URL."""
        path = self.data.segment(segment).table(table)
        rows = read_delta(path, None, pc.field("url").isin(urls), columns).to_pylist()
        return {row["url"]: row for row in rows}


def read_delta(path: str, schema, filters=None, columns=None) -> pa.Table:
    """A Delta table (or its ``columns``) filtered by a pyarrow expression; an empty table
    of ``schema`` when it does not exist."""
    try:
        dataset = DeltaTable(path).to_pyarrow_dataset()
    except (TableNotFoundError, FileNotFoundError):
        if schema is None:
            return pa.table({name: pa.array([], pa.string()) for name in columns or []})
        return schema.empty_table()
    return dataset.to_table(filter=filters, columns=columns)


def metadata_text(metadata: dict | None) -> str | None:
    """The job's metadata as stored (JSON text)."""
    return None if metadata is None else json.dumps(metadata, sort_keys=True)
