"""A fetch round's figures, counted by its tasks as they write their rows.

Each fetch task counts its rows by origin, outcome and reason as they pass on their way
to its Parquet file, and gives the counts back with the file's row
(``task_files.FILE_DDL``); the driver adds them up. Counting them again from the
written table was a Spark job and a scan of every page body's file each round.
"""

from __future__ import annotations

from collections.abc import Iterator

from crawldb.partitioning import skew
from lib import vocabulary as st
from lib.vocabulary import ORIGIN_PROBE, ORIGIN_ROBOTS, ORIGIN_SITEMAP

# The counts _count_group adds up, all present in a summary (0 when nothing counted).
SUMMARY_COUNTS = (
    "urls",
    "pages",
    "errors",
    "bytes",
    "robots_answers",
    "sitemaps",
    "soft404_templates",
    "probes",
)


class FetchFigures:
    """Task side: the counts of the fetch rows that pass through ``of_rows``."""

    def __init__(self):
        self.groups: dict[tuple, list[int]] = {}  # (origin, outcome, reason) -> counts
        self.first_ms: int | None = None  # the task's first request and last answer
        self.last_ms: int | None = None

    def of_rows(self, rows: Iterator[dict]) -> Iterator[dict]:
        """The rows, unchanged, counted."""
        for row in rows:
            self._count(row)
            yield row

    def figures(self) -> dict:
        """The counts, as the file row's ``figures`` (JSON-ready)."""
        groups = [[*key, *counts] for key, counts in self.groups.items()]
        return {"groups": groups, "first_ms": self.first_ms, "last_ms": self.last_ms}

    def _count(self, row: dict) -> None:
        # .get: a row leaves out the fields it has no value for (NULL in the table).
        key = (row["origin"], row["fetch_status"], row.get("reason"))
        counts = self.groups.setdefault(key, [0, 0, 0, 0])
        status = row.get("http_status")
        counts[0] += 1
        counts[1] += status is not None and status < 500
        counts[2] += status == 200
        counts[3] += row.get("content_length") or 0
        started = row.get("fetched_at")
        if row.get("warc_file") is not None and started is not None:
            ended = started + (row.get("duration_ms") or 0)
            self.first_ms = started if self.first_ms is None else min(self.first_ms, started)
            self.last_ms = ended if self.last_ms is None else max(self.last_ms, ended)


def fetch_summary(files: list[dict], seconds: float) -> dict:
    """Figures of a fetched segment from its tasks' files (``files``: their rows, with
    ``figures`` as JSON): rows by origin, outcome and reason; each task's busy time
    gives the partition skew."""
    import json

    summary: dict = dict.fromkeys(SUMMARY_COUNTS, 0)
    summary["outcomes"], summary["reasons"] = {}, {}
    busy = []
    for file in files:
        figures = json.loads(file["figures"])
        for origin, outcome, reason, rows, below_500, ok, size in figures["groups"]:
            group = {"origin": origin, "fetch_status": outcome, "reason": reason}
            group |= {"rows": rows, "below_500": below_500, "ok": ok, "bytes": size}
            _count_group(summary, group)
        if figures["first_ms"] is not None:
            busy.append(float(figures["last_ms"] - figures["first_ms"]))
    summary["deferred"] = summary["reasons"].get(st.REASON_DEFERRED, 0)
    summary["skew"] = skew(busy)
    summary["seconds"] = round(seconds, 1)
    summary["pages_per_second"] = round(summary["pages"] / seconds, 2) if seconds else 0.0
    return summary


def _count_group(summary: dict, group) -> None:
    """Add one (file, origin, outcome, reason) group of fetch rows to the summary."""
    origin, outcome, rows = group["origin"], group["fetch_status"], group["rows"]
    if origin == ORIGIN_ROBOTS:
        summary["robots_answers"] += group["below_500"] or 0
        return
    if origin == ORIGIN_SITEMAP:
        summary["sitemaps"] += rows if outcome == st.SUCCESS else 0
        return
    if origin == ORIGIN_PROBE:  # a 200 to a made-up path: the host's soft-404 page
        summary["soft404_templates"] += group["ok"] or 0
        summary["probes"] += rows
        return
    summary["urls"] += rows
    summary["pages"] += rows if outcome == st.SUCCESS else 0
    summary["errors"] += rows if outcome in (st.RETRY, st.NOT_FOUND) else 0
    summary["bytes"] += group["bytes"]
    for key, name in (("outcomes", outcome), ("reasons", group["reason"])):
        if name is not None:
            summary[key][name] = summary[key].get(name, 0) + rows
