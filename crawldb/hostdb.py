"""The hostdb's rule (Nutch's updatehostdb): one row per host (``crawldb.schema.HOSTDB``),
kept by updatedb from what each round changed, not from a scan of the crawldb.

A round gives *partial rows*, in the hostdb's layout, each with some columns set: how
many URLs of a host each crawldb status gained or lost (``status_changes``, from the
rows the round changed and what they were), what its requests of the round gave
(``fetch_figures``, from the segment's fetch table) and its robots.txt (``robots_figures``,
from the robots.txt cache). ``host_rows`` folds them into the hosts' rows as they were:
counts add up, the mean response time is weighted by the answers, the newest robots.txt
wins and the round's back-off figures replace the last round's. Over the whole crawldb
``status_changes`` gives the counts from nothing (a recount, when the hostdb cannot be
kept from its last version). Times are epoch ms, as the plain-Python rules take them.
The executors run the partial rules in the driver or in Spark's tasks
(``engine.executors.hostdb``); a host's partial rows from several tasks fold the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crawldb.schema import HOSTDB
from lib import vocabulary as st
from lib.fetching.robots import RobotsRules

STATUS_COLUMNS = {status: f"urls_{status}" for status in st.DB_STATUSES}
OUTCOME_COLUMNS = {outcome: f"fetches_{outcome}" for outcome in st.FETCH_OUTCOMES}
SUMMED = ("urls", *STATUS_COLUMNS.values(), *OUTCOME_COLUMNS.values())
ROBOTS_COLUMNS = ("robots_status", "robots_time", "crawl_delay", "delay")
# What the last round that asked a host says of it: replaced, not added up.
ROUND_COLUMNS = ("held_back", "circuit_open", "last_segment")
PAGE_ORIGINS = (st.ORIGIN_FETCHLIST, st.ORIGIN_REDIRECT, st.ORIGIN_OUTLINK)
HELD_BACK = (st.RETRY, st.SKIPPED)
ARROW_TYPES = ("STRING", "BIGINT", "INT", "DOUBLE", "BOOLEAN", "TIMESTAMP")


def python_schema():
    """The hostdb's Arrow schema as the rules give its rows (times in epoch ms)."""
    import pyarrow as pa

    kinds = dict(
        zip(
            ARROW_TYPES,
            (pa.string(), pa.int64(), pa.int32(), pa.float64(), pa.bool_(), pa.int64()),
            strict=True,
        )
    )
    return pa.schema([(name, kinds[kind]) for name, kind in HOSTDB.columns])


def partial_table(rows: list[dict]):
    """Partial (or whole) hostdb rows as an Arrow table of ``python_schema``."""
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=python_schema())


def status_changes(rows):
    """Partial rows of URL counts: ``rows`` (an Arrow table or batch) holds, per URL,
    its ``host`` and ``status`` as the round leaves it and its ``old_host`` and
    ``old_status`` before (NULL for a URL new to the crawldb); each host gets how many
    URLs each status gained (negative: lost). A host whose counts did not move gets none."""
    import pyarrow as pa
    import pyarrow.compute as pc

    gained = pa.table({"host": rows["host"], "status": rows["status"]})
    gained = gained.append_column("n", pa.repeat(pa.scalar(1, pa.int64()), len(gained)))
    known = rows.filter(pc.is_valid(rows["old_status"]))
    lost = pa.table({"host": known["old_host"], "status": known["old_status"]})
    lost = lost.append_column("n", pa.repeat(pa.scalar(-1, pa.int64()), len(lost)))
    nets = pa.concat_tables([gained, lost]).group_by(["host", "status"]).aggregate([("n", "sum")])
    by_host: dict[str, dict] = {}
    for net in nets.to_pylist():
        host, status, count = net["host"], net["status"], net["n_sum"]
        if count:
            row = by_host.setdefault(host, {"host": host, "urls": 0})
            row[STATUS_COLUMNS[status]] = count
            row["urls"] += count
    return partial_table(list(by_host.values()))


def fetch_figures(fetch, segment: str):
    """Partial rows of one round's requests: ``fetch`` (the fetch table's ``host``,
    ``origin``, ``fetch_status``, ``reason``, ``http_status``, ``duration_ms``,
    ``fetched_at`` and ``redirect_to``) gives each host asked its pages' fetches by
    outcome, its answers and their mean time, its pages held back and whether its circuit
    opened, its latest request and the status of its robots.txt if asked."""
    rows: dict[str, dict] = {}
    for request in fetch.to_pylist():
        row = rows.get(request["host"])
        if row is None:
            row = rows[request["host"]] = _round_row(request["host"], segment)
        _count_request(row, request)
    for row in rows.values():
        total = row.pop("_ms")
        row["mean_response_ms"] = total / row["responses"] if row["responses"] else None
    return partial_table(list(rows.values()))


def _round_row(host: str, segment: str) -> dict:
    return {
        "host": host,
        "responses": 0,
        "_ms": 0,
        "held_back": 0,
        "circuit_open": False,
        "last_segment": segment,
    }


def _count_request(row: dict, request: dict) -> None:
    """Fold one fetch table row into its host's partial row."""
    if request["fetched_at"] is not None:
        row["last_fetch_time"] = max(row.get("last_fetch_time") or 0, request["fetched_at"])
    if request["http_status"] is not None and request["duration_ms"] is not None:
        row["responses"] += 1
        row["_ms"] += request["duration_ms"]
    if request["origin"] == st.ORIGIN_ROBOTS and request["redirect_to"] is None:
        answer = {"robots_status": request["http_status"], "robots_time": request["fetched_at"]}
        if _robots_key(answer) > _robots_key(row):
            row.update(answer)
    elif request["origin"] in PAGE_ORIGINS:
        column = OUTCOME_COLUMNS[request["fetch_status"]]
        row[column] = row.get(column, 0) + 1
        row["held_back"] += request["fetch_status"] in HELD_BACK
        row["circuit_open"] |= request["reason"] == st.REASON_CIRCUIT


def robots_figures(answers, conf: Mapping[str, Any]):
    """Partial rows of robots.txt answers: ``answers`` (the robots.txt cache's ``host``,
    ``http_status``, ``content`` and ``fetched_at``) gives each host its robots.txt's
    status and time, its Crawl-delay for Trawl's agent and the pause kept between its
    requests (the larger of ``fetcher.server.delay`` and the Crawl-delay)."""
    base = float(conf["fetcher.server.delay"])
    agent, limit = conf["http.agent.name"], conf["robots.content.limit"]
    rows = []
    for answer in answers.to_pylist():
        status, body = answer["http_status"], bytes(answer["content"] or b"")
        delay = RobotsRules.from_response(status, body, agent, limit).crawl_delay()
        rows.append(
            {
                "host": answer["host"],
                "robots_status": status,
                "robots_time": answer["fetched_at"],
                "crawl_delay": delay,
                "delay": base if delay is None else max(base, delay),
            }
        )
    return partial_table(rows)


def host_rows(old, partials, recount: bool = False):
    """The hosts' rows after the round: ``old`` (hostdb rows as they were) with the
    ``partials`` folded in. Only the hosts of ``partials`` are given, unless ``recount``
    (the partials count every URL of the crawldb from nothing): then every host with a
    URL, the URL counts of ``old`` left out and its other figures kept."""
    if not recount:  # only the hosts of the round: the hostdb may hold millions
        import pyarrow as pa
        import pyarrow.compute as pc

        hosts = pa.array(sorted(set(partials["host"].to_pylist())), pa.string())
        old = old.filter(pc.is_in(old["host"], value_set=hosts))
    before = {row["host"]: row for row in old.to_pylist()}
    if recount:
        for row in before.values():
            row.update(dict.fromkeys(("urls", *STATUS_COLUMNS.values()), 0))
    result = dict(before) if recount else {}
    for host, part in folded(partials).items():
        row = result[host] = before.get(host) or {"host": host}
        _add(row, part, replace_round=True)
    rows = [_filled(row) for row in result.values()]
    if recount:
        rows = [row for row in rows if row["urls"] > 0]
    return partial_table(sorted(rows, key=lambda row: row["host"]))


def folded(partials) -> dict[str, dict]:
    """Host -> its partial rows folded into one."""
    hosts: dict[str, dict] = {}
    for part in partials.to_pylist():
        row = hosts.get(part["host"])
        if row is None:
            hosts[part["host"]] = {key: value for key, value in part.items() if value is not None}
        else:
            _add(row, part, replace_round=False)
    return hosts


def _add(row: dict, part: dict, replace_round: bool) -> None:
    """Fold the partial row ``part`` into ``row``: counts and answers added up, the
    newest robots.txt and request kept; the round's figures replace the row's
    (``replace_round``) or join them (two partial rows of one round)."""
    for column in SUMMED:
        if part.get(column):
            row[column] = (row.get(column) or 0) + part[column]
    answers = (row.get("responses") or 0) + (part.get("responses") or 0)
    if answers:
        total = sum(
            (r.get("mean_response_ms") or 0.0) * (r.get("responses") or 0) for r in (row, part)
        )
        row["responses"], row["mean_response_ms"] = answers, total / answers
    if part.get("robots_time") is not None and _robots_key(part) > _robots_key(row):
        row.update({column: part.get(column) for column in ROBOTS_COLUMNS})
    if part.get("last_fetch_time") is not None:
        row["last_fetch_time"] = max(row.get("last_fetch_time") or 0, part["last_fetch_time"])
    if part.get("last_segment") is not None:
        if replace_round or row.get("last_segment") is None:
            row.update({column: part.get(column) for column in ROUND_COLUMNS})
        else:
            row["held_back"] = (row.get("held_back") or 0) + (part.get("held_back") or 0)
            row["circuit_open"] = bool(row.get("circuit_open")) or bool(part.get("circuit_open"))


def _robots_key(row: Mapping) -> tuple:
    """Which robots.txt answer is newer: by its time, then the one with rules read."""
    return (row.get("robots_time") or -1, row.get("delay") is not None)


def _filled(row: dict) -> dict:
    """A whole hostdb row: counts absent are 0, the round's figures absent are none."""
    for column in (*SUMMED, "responses", "held_back"):
        row[column] = row.get(column) or 0
    row["circuit_open"] = bool(row.get("circuit_open"))
    return row
