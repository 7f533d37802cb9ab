"""updatedb in the driver, for a small crawldb (``db.driver.urls``).

updatedb by Spark runs some forty Spark jobs a round (the reads of the crawldb and the
segment, the links' shuffle, admission's windows, the merge's checkpoint, the rewrite),
each a fixed cost however few rows it moves: most of a round's time outside fetching on
a crawldb of a few thousand URLs. Here the same round is applied without a Spark job:
the crawldb and the segment are read through delta-rs (``engine.tables.driver_tables``), the
links found and admitted (``engine.executors.driver_links``), every touched URL merged by
``crawldb.merge``, the soft-404 pages and (for crawl) the round's duplicates marked by
the same rules, and the crawldb files holding a changed URL rewritten and committed in
one Delta commit (``engine.tables.driver_rewrite``), as ``engine.tables.file_rewrite``
commits Spark's.
tests/test_driver_rounds.py checks that both ways leave the same crawldb.
"""

from __future__ import annotations

from crawldb import duplicates, soft404
from crawldb.duplicate_keys import PAGE_COLUMNS
from crawldb.merge import touched_row
from crawldb.schema import CRAWLDB, FETCH, PARSE, SITEMAPS
from engine.caches.probe_cache import soft_404_templates
from engine.executors.driver_links import admitted, found_links
from engine.executors.freshness import PAGE_STATUSES, freshness_of
from engine.executors.hostdb import driver_changes
from engine.executors.round_dedup import summary_of
from engine.runtime.layout import DataDir, Segment
from engine.tables.delta_files import delta_columns, table_rows
from engine.tables.driver_rewrite import CrawldbFiles
from engine.tables.driver_tables import is_plain, python_rows, rows_by_url
from lib import vocabulary as st
from lib.clock import Stopwatch, now_ms
from lib.url.normalize import UrlNormalizer
from lib.vocabulary import ORIGIN_PROBE, ORIGIN_ROBOTS, ORIGIN_SITEMAP

FINGERPRINTS = ("content_hash", "simhash", "minhash", "title", "canonical")


def crawldb_in_driver(conf: dict, data: DataDir) -> bool:
    """Whether the crawldb is small enough for the driver (``db.driver.urls``), read
    plain, and of the current schema (an older one gains its columns by Spark)."""
    limit = conf["db.driver.urls"]
    if limit <= 0 or not is_plain(data.crawldb):
        return False
    if set(CRAWLDB.names) - set(delta_columns(data.crawldb)):
        return False
    urls = table_rows(data.crawldb)
    return urls is not None and urls <= limit


def in_driver(conf: dict, data: DataDir, segment: Segment) -> bool:
    """Whether the round is applied in the driver: a crawldb the driver takes
    (``crawldb_in_driver``) and a segment of up to ``db.driver.urls`` fetches, every
    table read plain, and no opted-out host to delete."""
    if conf["db.optout.hosts"] or not crawldb_in_driver(conf, data):
        return False
    tables = [segment.table("fetch"), segment.table("parse")]
    if segment.summary("parsed").get("sitemap_urls"):
        tables.append(segment.table("sitemaps"))
    if not all(is_plain(path) for path in tables):
        return False
    fetches = table_rows(segment.table("fetch"))
    return fetches is not None and fetches <= conf["db.driver.urls"]


def update_in_driver(spark, conf: dict, data: DataDir, segment: Segment, dedup: bool):
    """Apply the segment to the crawldb in the driver: ``(summary, deduped, changes)``,
    as ``jobs.updatedb``'s Spark way gives them (``deduped``: None without ``dedup``)."""
    files = CrawldbFiles(data)
    crawldb = files.rows
    pages, fetched = segment_pages(segment)
    found = found_links(conf, crawldb, fetched["parsed"], pages, segment_sitemaps(segment))
    links, refused = admitted(conf, found, crawldb.select(["url", "dedup_key", "host"]))
    changed = merged_rows(conf, segment.name, crawldb, fetched["pages"], links)
    mark_soft_404(changed, soft_404_templates(spark, conf, data, segment), segment.name, conf)
    deduped = None
    if dedup:
        watch = Stopwatch()
        changed, deduped = with_round_duplicates(conf, segment.name, crawldb, changed)
        deduped["seconds"] = round(watch.seconds, 1)
    new = sum(1 for row in changed if row["fetch_count"] == 0 and row["segment"] is None)
    summary = {"changed": len(changed), "new": new}
    changes = driver_changes(crawldb, changed) if conf["hostdb.enabled"] else None
    if changed:
        files.rewrite(spark, changed, f"trawl updatedb segment={segment.name}")
    summary["opted_out_removed"] = 0
    summary["freshness"] = freshness_of(files.state_rows(changed), now_ms())
    summary["crawldb"] = summary["freshness"]["urls"]
    summary["rejected"] = rejected(segment, refused)
    return summary, deduped, changes


def segment_pages(segment: Segment) -> tuple[list[dict], dict]:
    """The fetch table's page rows (probes included, robots.txt and sitemaps left out;
    no body, no headers), and ``{"pages": url -> fetched page (probes left out) with
    parse's fingerprints, "parsed": parse's rows}``."""
    columns = [name for name in FETCH.names if name not in ("content", "headers")]
    fetch = python_rows(segment.table("fetch"), FETCH, columns)
    pages = [row for row in fetch if row["origin"] not in (ORIGIN_ROBOTS, ORIGIN_SITEMAP)]
    parsed = python_rows(segment.table("parse"), PARSE, ["url", *FINGERPRINTS, "outlinks"])
    prints = {row["url"]: row for row in parsed}
    fetched = {}
    for page in pages:
        if page["origin"] != ORIGIN_PROBE:
            known = prints.get(page["url"], {})
            fetched[page["url"]] = {**page, **{name: known.get(name) for name in FINGERPRINTS}}
    return pages, {"pages": fetched, "parsed": parsed, "prints": prints}


def segment_sitemaps(segment: Segment) -> list[dict] | None:
    """The segment's sitemap entries (written by parse), or None when it has none."""
    if not segment.summary("parsed").get("sitemap_urls"):
        return None
    return python_rows(segment.table("sitemaps"), SITEMAPS)


def merged_rows(conf: dict, segment: str, crawldb, fetched: dict, links: list[dict]):
    """The changed crawldb rows: ``crawldb.merge.touched_row`` of every URL the round
    fetched or kept a link to (``crawldb``: the crawldb as an Arrow table, times in ms)."""
    by_link = {link["url"]: link for link in links}
    urls = set(fetched) | set(by_link)
    olds = rows_by_url(crawldb, urls)
    normalizer, stamp = UrlNormalizer(conf), now_ms()
    changed = []
    for url in sorted(urls):
        touched = {"url": url, "old": olds.get(url), "fetch": fetched.get(url)}
        row = touched_row(conf, segment, stamp, normalizer, touched | {"links": by_link.get(url)})
        if row is not None:
            changed.append(row)
    return changed


def mark_soft_404(changed: list[dict], templates: dict, segment: str, conf: dict) -> None:
    """Make gone the changed rows that look like their host's soft-404 page
    (``crawldb.soft404.soft_404_hits``; ``templates``: ``soft_404_templates``')."""
    import pyarrow as pa

    if not templates or not changed:
        return
    columns = {
        "host": pa.string(),
        "status": pa.string(),
        "segment": pa.string(),
        "content_hash": pa.string(),
        "simhash": pa.int64(),
    }
    rows = pa.table(
        {name: pa.array([row[name] for row in changed], kind) for name, kind in columns.items()}
    )
    hits = soft404.soft_404_hits(rows, templates, segment, conf["dedup.simhash.distance"])
    for index in hits.nonzero()[0]:
        changed[index].update(status=st.GONE, reason="soft_404")


def with_round_duplicates(conf: dict, segment: str, crawldb, changed: list[dict]):
    """``changed`` with the round's duplicate verdicts (``crawldb.duplicates``' rules
    over every content page of the crawldb as the round leaves it), plus the earlier
    rows they change; and the figures, as ``engine.executors.round_dedup`` gives them."""
    found = duplicates.round_verdicts(pages_after(crawldb, changed, segment), conf)
    by_url = {row["url"]: row for row in changed}
    earlier = {}
    for verdict in found.filter(found.column("changed")).to_pylist():
        target = (verdict["status"], verdict["duplicate_of"])
        if verdict["url"] in by_url:
            by_url[verdict["url"]].update(status=target[0], duplicate_of=target[1])
        else:
            earlier[verdict["url"]] = target
    for row in rows_by_url(crawldb, earlier).values():
        row["status"], row["duplicate_of"] = earlier[row["url"]]
        changed.append(row)
    return changed, summary_of(found)


def pages_after(crawldb, changed: list[dict], segment: str):
    """The rules' page table (``PAGE_DDL``) of the crawldb's content pages (an Arrow
    table, times in ms) as they are once ``changed`` replaces their rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def content(rows):
        statuses = pa.array(PAGE_STATUSES, pa.string())
        page = pc.is_in(rows.column("status"), value_set=statuses)
        return rows.filter(pc.and_(page, pc.is_valid(rows.column("content_hash"))))

    urls = pa.array([row["url"] for row in changed], pa.string())
    kept = crawldb.filter(pc.invert(pc.is_in(crawldb.column("url"), value_set=urls)))
    now = pa.Table.from_pylist([{c: row[c] for c in PAGE_COLUMNS} for row in changed])
    columns = list(PAGE_COLUMNS)
    pages = pa.concat_tables(
        [content(kept).select(columns), content(now.cast(kept.select(columns).schema))]
    )
    fresh = pc.fill_null(pc.equal(pages.column("segment"), segment), False)
    return pages.append_column("fresh", fresh)


def rejected(segment: Segment, refused: dict[str, int]) -> dict[str, int]:
    """Links kept out of the crawldb this round, by reason: by parse (counted by the
    fetch tasks, or summed from the parse table) and by admission (``refused``)."""
    from collections import Counter

    by_parse = segment.summary("parsed").get("links_rejected")
    if by_parse is None:
        by_parse = Counter()
        for row in python_rows(segment.table("parse"), PARSE, ["links_rejected"]):
            for reason, count in row.get("links_rejected") or ():
                by_parse[reason] += count
    counts = Counter(refused)
    counts.update(by_parse)
    return dict(sorted(counts.items()))
