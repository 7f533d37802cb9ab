"""The operator's page (``GET /dashboard``): the crawldb by status, pages per second,
errors and durations of the last rounds (charts by uPlot, served with the page: the
machine may be offline), the slowest and the most erroring hosts of the last fetch, the
fetch under way with its ETA. Rendered on the server from ``engine.tables.health``'s
figures; the page reloads itself every ``api.dashboard.refresh`` seconds."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from html import escape

from engine.tables.health import Figures
from engine.tables.prometheus import STATUSES

HOSTS_SHOWN = 10
STYLE = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}
table{border-collapse:collapse;background:#fff}td,th{padding:.25em .7em;border:1px solid #ddd}
td.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#777}
.grid{display:flex;flex-wrap:wrap;gap:2em}.bar{background:#4c78a8;height:.8em}
"""


def page(figures: Figures, root: str, refresh: float, key_query: str) -> str:
    """The whole HTML page."""
    finished = figures.jobs.get("updatedb", {}).get("finished")
    parts = [
        f"<h1>Trawl: {escape(root)}</h1>",
        f'<p class="muted">last round finished {_when(finished)}; page made {_when(None)}; '
        f"reloads every {refresh:g} s</p>",
        _running(figures.running),
        '<div class="grid">',
        _statuses(figures.statuses),
        _rounds_table(figures.rounds),
        "</div>",
        '<h2>Rounds</h2><div class="grid">',
        '<div id="chart-speed"></div><div id="chart-time"></div></div>',
        '<div class="grid">',
        _hosts("Slowest hosts (median answer)", "slowest", figures.hosts, "median_ms"),
        _hosts("Most erroring hosts", "erroring", figures.hosts, "errors"),
        "</div>",
    ]
    script = _charts_script(figures.rounds)
    return (
        "<!doctype html><html><head><meta charset=utf-8><title>Trawl dashboard</title>"
        f'<meta http-equiv="refresh" content="{refresh:g}">'
        f'<link rel="stylesheet" href="dashboard/uPlot.min.css{key_query}">'
        f"<style>{STYLE}</style></head><body>{''.join(parts)}"
        f'<script src="dashboard/uPlot.iife.min.js{key_query}"></script>'
        f"<script>{script}</script></body></html>"
    )


def _when(epoch: float | None) -> str:
    moment = datetime.now(UTC) if epoch is None else datetime.fromtimestamp(epoch, UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if epoch != 0 else "never"


def _statuses(statuses: dict[str, int]) -> str:
    total = sum(statuses.values())
    rows = []
    for status in sorted(set(STATUSES) | set(statuses)):
        count = statuses.get(status, 0)
        width = 0 if not total else round(200 * count / total)
        rows.append(
            f'<tr><td>{escape(status)}</td><td class="n" id="status-{escape(status)}">{count}</td>'
            f'<td><div class="bar" style="width:{width}px"></div></td></tr>'
        )
    return (
        "<div><h2>crawldb by status</h2><table><tr><th>status</th><th>URLs</th><th></th></tr>"
        f'{"".join(rows)}<tr><th>all</th><th class="n" id="crawldb-total">{total}</th>'
        "<th></th></tr></table></div>"
    )


def _rounds_table(rounds: list[dict]) -> str:
    rows = "".join(
        f'<tr><td>{escape(r["segment"] or "")}</td><td class="n">{r["seconds"]:.1f}</td>'
        f'<td class="n">{r["pages"]:.0f}</td><td class="n">{r["pages_per_second"]:.1f}</td>'
        f'<td class="n">{r["errors"]:.0f}</td><td class="n">{r["deferred"]:.0f}</td></tr>'
        for r in reversed(rounds[-8:])
    )
    return (
        '<div><h2>Last fetches</h2><table id="rounds"><tr><th>segment</th><th>s</th>'
        f"<th>pages</th><th>pages/s</th><th>errors</th><th>deferred</th></tr>{rows}</table></div>"
    )


def _hosts(title: str, name: str, hosts: list[dict], by: str) -> str:
    chosen = sorted(hosts, key=lambda h: (-(h.get(by) or 0), h["host"]))[:HOSTS_SHOWN]
    rows = "".join(
        f'<tr><td>{escape(h["host"])}</td><td class="n">{h["urls"]}</td>'
        f'<td class="n">{h["pages"]}</td><td class="n">{h["errors"]}</td>'
        f'<td class="n">{h.get("median_ms") or 0:.0f}</td></tr>'
        for h in chosen
        if h.get(by)
    )
    return (
        f'<div><h2>{escape(title)}</h2><table id="hosts-{name}"><tr><th>host</th><th>URLs</th>'
        f"<th>pages</th><th>errors</th><th>median ms</th></tr>{rows}</table></div>"
    )


def _running(running: dict | None) -> str:
    if running is None:
        return '<p id="running">No fetch under way.</p>'
    eta = running["eta_seconds"]
    when = "unknown" if eta is None else f"{eta:.0f} s"
    return (
        f'<p id="running">Fetching segment {escape(running["segment"])}: '
        f"{running['done']} of {running['listed']} URLs, ETA {when}.</p>"
    )


def _charts_script(rounds: list[dict]) -> str:
    """Two uPlot charts: pages per second and errors per round; each round's seconds."""
    data = {
        "t": [r["finished"] for r in rounds],
        "speed": [r["pages_per_second"] for r in rounds],
        "errors": [r["errors"] for r in rounds],
        "seconds": [r["seconds"] for r in rounds],
    }
    return (
        f"const d={json.dumps(data)};"
        "function chart(id,title,series,values){"
        "new uPlot({title:title,width:520,height:220,series:[{}].concat(series)},"
        "[d.t].concat(values),document.getElementById(id));}"
        "if(d.t.length){"
        "chart('chart-speed','Pages per second and errors per fetch',"
        "[{label:'pages/s',stroke:'#4c78a8'},{label:'errors',stroke:'#e45756'}],[d.speed,d.errors]);"
        "chart('chart-time','Seconds per fetch',[{label:'seconds',stroke:'#54a24b'}],[d.seconds]);}"
    )
