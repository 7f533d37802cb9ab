"""Parse inside the fetch task (``fetcher.parse``, as Nutch's): no parse job in the round.

A separate parse job reads every page body back from the fetch table, a Spark stage
and a Delta commit of its own each round. Here the fetch task hands each page it
fetched to a thread that parses it while the fetch goes on, and writes the task's
file of the segment's ``parse`` table (and of its ``sitemaps`` table, when a sitemap
came) beside the task's ``fetch`` file, committed with it by ``jobs.fetch``. The
rows are the parse job's, to the byte: the same ``parse_batch`` and ``sitemap_entries``.

Why a thread: the fetcher drives its transfers from the task's own thread, so a batch
parsed there would hold every transfer in flight and stretch the response times the
adaptive delay reads. lxml leaves the interpreter lock while it parses; the queue
between the two is bounded, so a parse that falls behind slows the fetch instead of
filling memory.

Here too the rows are made that both ways share (``parse_batch``, ``sitemap_entries``)
and the parse stage's end (``finish_parse``): its marker, metrics row and progress line.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from functools import partial

from engine.runtime.layout import Segment
from engine.runtime.progress import progress
from engine.tables import arrow, task_files
from engine.tables.metrics import record
from lib import vocabulary as st
from lib.clock import Stopwatch
from lib.content.fingerprint import content_hash
from lib.content.parse import HTML_TYPES, PageParsers, ParseResult
from lib.content.sitemaps import parse_sitemap
from lib.export import Exports, documents
from lib.parquet_file import write_parquet
from lib.url.filter import UrlFilter, clean
from lib.vocabulary import ORIGIN_ROBOTS, ORIGIN_SITEMAP

QUEUED_PAGES = 64  # pages fetched and not yet parsed, at most
_END = object()  # the fetch is over


def parse_batch(conf: dict, rows: list, parsers: PageParsers | None = None) -> list[dict]:
    """Parse fetch-result rows into parse-table rows: dicts from Arrow (``headers`` as
    key-value pairs), or the fetcher's own (which leave out the fields with no value).
    A body cut at a size limit is parsed only when it is HTML (a cut PDF is unreadable):
    others are recorded not_parsed, reason truncated."""
    parsers = parsers or PageParsers(conf)
    whole = [row for row in rows if not _cut_not_html(row)]
    pages = [
        (row["url"], row["content"] or b"", row.get("content_type"), _headers(row.get("headers")))
        for row in whole
    ]
    parsed = dict(zip((row["url"] for row in whole), parsers.parse(pages), strict=True))
    return [parse_table_row(row["url"], parsed.get(row["url"]) or _cut(row)) for row in rows]


def _cut(row: dict) -> ParseResult:
    return ParseResult(
        "not_parsed", reason="truncated", content_hash=content_hash(row["content"] or b"")
    )


def _cut_not_html(row: dict) -> bool:
    kind = (row.get("content_type") or "text/html").split(";")[0].strip().lower()
    return bool(row.get("truncated")) and kind not in HTML_TYPES


def _headers(pairs) -> dict | None:
    return None if pairs is None else dict(pairs)


def parse_table_row(url: str, result) -> dict:
    """A ParseResult as a row of the parse table."""
    return {
        "url": url,
        "parse_status": result.status,
        "reason": result.reason,
        "title": result.title,
        "description": result.description,
        "language": result.language,
        "canonical": result.canonical,
        "feeds": result.feeds,
        "encoding": result.encoding,
        "encoding_source": result.encoding_source,
        "text": result.text,
        "content_hash": result.content_hash,
        "simhash": result.simhash,
        "minhash": result.minhash,
        "outlinks": [(ln.url, ln.anchor, ln.rel, ln.metadata) for ln in result.outlinks],
        "links_rejected": result.links_rejected,
        "robots": result.robots,
        "metadata": result.metadata,
    }


def sitemap_entries(conf: dict, rows) -> Iterator[dict]:
    """Spark task: the URL-set entries of fetched sitemaps, normalized and filtered."""
    url_filter = UrlFilter(conf)  # once per partition
    for row in rows:
        parsed = parse_sitemap(
            row["url"], bytes(row["content"] or b""), conf["sitemap.content.limit"]
        )
        if parsed.kind == "index":
            continue  # the fetcher fetched the sitemaps it lists
        for entry in parsed.entries:
            key, _ = clean(entry.loc, url_filter)
            if key is not None:
                yield {
                    "url": key,
                    "lastmod": entry.lastmod_ms,
                    "changefreq": entry.changefreq_s,
                    "priority": entry.priority,
                    "sitemap": row["url"],
                }


class TaskParser:
    """The parse of one fetch task's pages, in a thread of its own."""

    def __init__(self, conf: dict, segment: Segment, task: tuple[str, int, int], stored: dict):
        """``task``: the run, partition and attempt; ``stored``: table name -> the
        Arrow schema its files are written in (``task_files.stored_schema``)."""
        run, index, attempt = task
        self.conf, self.segment, self.stored = conf, segment, stored
        self.compression = conf["spark.sql.parquet.compression.codec"]
        self.paths = {
            name: task_files.task_file(segment.table(name), run, index, attempt, self.compression)
            for name in ("parse", "sitemaps")
        }
        self.figures: dict = dict.fromkeys(("pages", "html", "failed", "outlinks"), 0)
        self.figures["links_rejected"] = {}  # links parse kept out, by reason
        self.sitemap_rows: list[dict] = []
        self.parsers = PageParsers(conf)  # the task's parser and filter plugins, made once
        self.exports = Exports(conf)  # and its exporters
        self.pages: queue.Queue = queue.Queue(QUEUED_PAGES)
        self.written: tuple[int, int] | None = None
        self.error: BaseException | None = None
        self.ended = False  # the thread took the fetch's end
        self.thread = threading.Thread(target=self._work, name="trawl-task-parse", daemon=True)
        self.thread.start()

    def tee(self, rows: Iterator[dict]) -> Iterator[dict]:
        """The fetch rows, unchanged; each page and sitemap among them goes to the parse."""
        try:
            for row in rows:
                if row["fetch_status"] == st.SUCCESS and row["origin"] != ORIGIN_ROBOTS:
                    self._put(row)
                yield row
        except BaseException:
            self._put(_END)
            self.thread.join()
            raise
        self._put(_END)

    def files(self) -> Iterator:
        """After the fetch rows are consumed: the rows (``task_files.FILE_DDL``) of the
        files written, once the parse is done; raises what the parse raised."""
        self.thread.join()
        if self.error is not None:
            raise self.error
        if self.written is not None:
            rows, size = self.written
            yield task_files.file_row(self.paths["parse"], size, rows, self.figures)
        if self.sitemap_rows:
            stored = self.stored["sitemaps"]
            batches = task_files.stored_batches(self.sitemap_rows, stored, "url")
            path = self.paths["sitemaps"]
            yield from task_files.write_task_file(
                self.segment.storage, path, batches, stored, self.compression
            )

    def _put(self, item) -> None:
        while self.thread.is_alive():  # a parse that failed takes nothing more
            try:
                self.pages.put(item, timeout=1.0)
                return
            except queue.Full:
                continue

    def _work(self) -> None:
        try:
            stored = self.stored["parse"]
            batches = (task_files.as_stored(batch, stored) for batch in self._parsed(stored))
            rows, size = write_parquet(
                self.segment.storage, self.paths["parse"], batches, stored, self.compression
            )
            self.exports.close()
            self.written = (rows, size) if rows else None
            if not rows:
                self.segment.storage.delete(self.paths["parse"])
        except BaseException as exc:  # given to the task's thread by files()
            self.error = exc
            while not self.ended:  # let the fetch end
                self.ended = self.pages.get() is _END

    def _parsed(self, stored) -> Iterator:
        """Record batches of parse rows: the pages queued when the thread wakes, parsed
        together (one vectorised SimHash pass), as many as a batch holds."""
        import pyarrow as pa

        schema = task_files.python_schema(stored)
        while not self.ended:
            taken = [self.pages.get()]
            while len(taken) < arrow.BATCH_ROWS and taken[-1] is not _END:
                try:
                    taken.append(self.pages.get_nowait())
                except queue.Empty:
                    break
            self.ended = taken[-1] is _END
            pages = [row for row in taken if row is not _END]
            self.sitemap_rows += sitemap_entries(
                self.conf, [row for row in pages if row["origin"] == ORIGIN_SITEMAP]
            )
            pages = [row for row in pages if row["origin"] != ORIGIN_SITEMAP]
            if pages:
                parsed = parse_batch(self.conf, pages, self.parsers)
                self.exports.export(documents(pages, parsed))
                self._count(parsed)
                yield pa.RecordBatch.from_pylist(parsed, schema=schema)

    def _count(self, parsed: list[dict]) -> None:
        self.figures["pages"] += len(parsed)
        self.figures["html"] += sum(1 for row in parsed if row["parse_status"] == "success")
        self.figures["failed"] += sum(1 for row in parsed if row["parse_status"] == "failed")
        self.figures["outlinks"] += sum(len(row["outlinks"] or ()) for row in parsed)
        rejected = self.figures["links_rejected"]
        for row in parsed:
            for reason, count in (row["links_rejected"] or {}).items():
                rejected[reason] = rejected.get(reason, 0) + count


def commit_parsed(segment: Segment, run: str, written: list[dict], stored: dict) -> dict:
    """Driver side, after the fetch tasks: commit the files of the ``parse`` and
    ``sitemaps`` tables they wrote (``written``: their rows, ``task_files.FILE_DDL``;
    ``stored``: table name -> Arrow schema); the parse stage's summary, from the tasks'
    figures."""
    clock = Stopwatch()
    message = f"trawl parse segment={segment.name}"
    parsed, listed = ([row for row in written if row["table"] == t] for t in ("parse", "sitemaps"))
    commit = partial(task_files.commit, segment.storage, run=run, message=message)
    commit(segment.table("parse"), files=parsed, schema=stored["parse"])
    if listed:  # no sitemaps table without a sitemap, as the parse job
        commit(segment.table("sitemaps"), files=listed, schema=stored["sitemaps"])
    summary = dict.fromkeys(("pages", "html", "failed", "outlinks"), 0)
    rejected: dict[str, int] = {}  # links parse kept out, by reason
    for row in parsed:
        figures = json.loads(row["figures"])
        for reason, count in figures.pop("links_rejected").items():
            rejected[reason] = rejected.get(reason, 0) + count
        for key, value in figures.items():
            summary[key] += value
    summary["sitemap_urls"] = sum(row["rows"] for row in listed)
    summary["links_rejected"] = dict(sorted(rejected.items()))
    summary["in_fetch"] = 1  # parsed by the fetch tasks: seconds are the commit's
    summary["seconds"] = round(clock.seconds, 1)
    return summary


def finish_parse(spark, segment: Segment, summary: dict) -> None:
    """Mark the segment parsed, record the stage's figures and print its line."""
    segment.mark("parsed", summary)
    record(spark, segment.root, "parse", segment.name, summary)
    keys = ("pages", "html", "failed", "outlinks", "sitemap_urls")
    progress("parse", [(key, summary[key]) for key in keys])
