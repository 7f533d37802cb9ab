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

from crawldb import duplicate_meetings as meetings
from crawldb import duplicates, soft404
from crawldb.duplicate_keys import PAGE_COLUMNS
from crawldb.merge import changed_batch, new_link_rows
from crawldb.schema import CRAWLDB, FETCH, PARSE, SITEMAPS
from engine.caches.probe_cache import soft_404_templates
from engine.executors.driver_links import admitted, found_links
from engine.executors.freshness import PAGE_STATUSES, freshness_of
from engine.executors.hostdb import driver_changes
from engine.executors.round_dedup import summary_of
from engine.runtime.layout import DataDir, Segment
from engine.tables import arrow
from engine.tables.delta_files import delta_columns, table_rows
from engine.tables.driver_rewrite import CrawldbFiles
from engine.tables.driver_tables import arrow_table, is_plain, python_rows
from lib.clock import Stopwatch, now_ms
from lib.url.normalize import UrlNormalizer
from lib.vocabulary import ORIGIN_PROBE, ORIGIN_ROBOTS, ORIGIN_SITEMAP

FINGERPRINTS = ("content_hash", "simhash", "minhash", "title", "canonical")
# Touched URLs merged at once: their rows are the only per-row Python objects the driver
# makes from the crawldb, so a chunk bounds their memory, not the round's size.
MERGE_CHUNK = 10_000


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
    import pyarrow.compute as pc

    files = CrawldbFiles(data)
    crawldb = files.rows
    pages, fetched = segment_pages(segment)
    found = found_links(conf, crawldb, fetched["parsed"], pages, segment_sitemaps(segment))
    links, refused = admitted(conf, found, crawldb.select(["url", "dedup_key", "host"]))
    changed = merged_rows(conf, segment.name, crawldb, fetched["pages"], links)
    templates = soft_404_templates(spark, conf, data, segment)
    if templates and changed.num_rows:
        changed = soft404.marked(changed, templates, segment.name, conf["dedup.simhash.distance"])
    deduped = None
    if dedup:
        watch = Stopwatch()
        changed, deduped = with_round_duplicates(conf, segment.name, crawldb, changed)
        deduped["seconds"] = round(watch.seconds, 1)
    new = pc.and_(pc.equal(changed.column("fetch_count"), 0), pc.is_null(changed.column("segment")))
    summary = {"changed": changed.num_rows, "new": pc.sum(new.cast("int64")).as_py() or 0}
    changes = driver_changes(crawldb, changed) if conf["hostdb.enabled"] else None
    if changed.num_rows:
        files.rewrite(spark, changed, f"trawl updatedb segment={segment.name}")
    summary["opted_out_removed"] = 0
    summary["freshness"] = freshness_of(files.state_rows(changed), now_ms())
    summary["crawldb"] = summary["freshness"]["urls"]
    summary["rejected"] = rejected(segment, refused)
    return summary, deduped, changes


def segment_pages(segment: Segment) -> tuple[list[dict], dict]:
    """The fetch table's page rows (probes included, robots.txt and sitemaps left out;
    no body, no headers), and ``{"pages": url -> fetched page (probes left out) with
    parse's fingerprints, "parsed": parse's rows (an Arrow table, outlinks included)}``."""
    columns = [name for name in FETCH.names if name not in ("content", "headers")]
    fetch = python_rows(segment.table("fetch"), FETCH, columns)
    pages = [row for row in fetch if row["origin"] not in (ORIGIN_ROBOTS, ORIGIN_SITEMAP)]
    parsed = arrow_table(segment.table("parse"), PARSE, ["url", *FINGERPRINTS, "outlinks"])
    prints = {row["url"]: row for row in parsed.drop_columns(["outlinks"]).to_pylist()}
    fetched = {}
    for page in pages:
        if page["origin"] != ORIGIN_PROBE:
            known = prints.get(page["url"], {})
            fetched[page["url"]] = {**page, **{name: known.get(name) for name in FINGERPRINTS}}
    return pages, {"pages": fetched, "parsed": parsed}


def segment_sitemaps(segment: Segment) -> list[dict] | None:
    """The segment's sitemap entries (written by parse), or None when it has none."""
    if not segment.summary("parsed").get("sitemap_urls"):
        return None
    return python_rows(segment.table("sitemaps"), SITEMAPS)


def merged_rows(conf: dict, segment: str, crawldb, fetched: dict, links):
    """The changed crawldb rows (an Arrow table, times in ms): ``crawldb.merge``'s
    ``changed_batch`` of every URL the round fetched or kept a link to (``crawldb``, the
    crawldb, and ``links``, the links kept, Arrow tables), ``MERGE_CHUNK`` URLs at a time:
    only one chunk's rows are Python objects at once."""
    import pyarrow as pa
    import pyarrow.compute as pc

    _, schema = arrow.schemas(CRAWLDB)
    linked = links.column("url").combine_chunks()
    normalizer, stamp = UrlNormalizer(conf), now_ms()
    # The URLs new and only linked to are made by columns (crawldb.merge.new_link_rows).
    known = pc.is_in(linked, value_set=crawldb.column("url").combine_chunks())
    fresh = pc.invert(
        pc.or_(known, pc.is_in(linked, value_set=pa.array(list(fetched), pa.string())))
    )
    made = new_link_rows(links.filter(fresh), stamp, conf, schema)
    rest = linked.filter(pc.invert(fresh)).to_pylist()
    urls = pa.array(sorted(set(fetched) | set(rest)), pa.string())
    old_at = pc.index_in(urls, value_set=crawldb.column("url").combine_chunks())
    link_at = pc.index_in(urls, value_set=linked)
    batches = made.to_batches()
    for start in range(0, len(urls), MERGE_CHUNK):
        part = slice(start, start + MERGE_CHUNK)
        chunk = urls[part].to_pylist()
        olds, found = rows_at(crawldb, old_at[part]), rows_at(links, link_at[part])
        touched = [
            {"url": url, "old": old, "fetch": fetched.get(url), "links": link}
            for url, old, link in zip(chunk, olds, found, strict=True)
        ]
        batch = changed_batch(conf, segment, stamp, normalizer, touched, schema)
        if batch is not None:
            batches.append(batch)
    return pa.Table.from_batches(batches, schema)


def rows_at(table, indices) -> list[dict | None]:
    """The rows of the Arrow ``table`` at ``indices`` (an Arrow array), as dicts; None
    where an index is null."""
    import pyarrow.compute as pc

    valid = pc.is_valid(indices)
    taken = iter(table.take(indices.filter(valid)).to_pylist())
    return [next(taken) if present else None for present in valid.to_pylist()]


def with_round_duplicates(conf: dict, segment: str, crawldb, changed):
    """``changed`` (an Arrow table) with the round's duplicate verdicts
    (``crawldb.duplicates``' rules over the content pages of the crawldb as the round
    leaves it that the round meets, ``crawldb.duplicate_meetings``), plus the earlier
    rows they change; and the figures, as ``engine.executors.round_dedup`` gives them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pages = pages_after(crawldb, changed, segment)
    met = meetings.met_pages(pages, conf, conf["dedup.canonical"])
    found = duplicates.round_verdicts(met, conf)
    judged = found.filter(found.column("changed"))
    now = pc.is_in(judged.column("url"), value_set=changed.column("url").combine_chunks())
    earlier_urls = judged.filter(pc.invert(now)).column("url").combine_chunks()
    earlier = crawldb.filter(pc.is_in(crawldb.column("url"), value_set=earlier_urls))
    rows = pa.concat_tables([changed, earlier.select(changed.column_names).cast(changed.schema)])
    return duplicates.with_verdicts(rows, judged), summary_of(found)


def pages_after(crawldb, changed, segment: str):
    """The rules' page table (``PAGE_DDL``) of the crawldb's content pages (``crawldb``
    and ``changed``: Arrow tables, times in ms) as they are once ``changed`` replaces
    their rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def content(rows):
        statuses = pa.array(PAGE_STATUSES, pa.string())
        page = pc.is_in(rows.column("status"), value_set=statuses)
        return rows.filter(pc.and_(page, pc.is_valid(rows.column("content_hash"))))

    urls = changed.column("url").combine_chunks()
    kept = crawldb.filter(pc.invert(pc.is_in(crawldb.column("url"), value_set=urls)))
    columns = list(PAGE_COLUMNS)
    kept = content(kept).select(columns)
    pages = pa.concat_tables([kept, content(changed).select(columns).cast(kept.schema)])
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
