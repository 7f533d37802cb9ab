"""The soft-404 probe cache beside the crawldb (``DIR/soft404``, one row per host).

The fetcher asks a host for a path that cannot exist to learn its "not found" page
(``fetcher.soft404.probe``). The answer changes rarely, so it is kept here by updatedb,
with the fingerprints parse computed for it, and a fetch round does not probe a host
again while its answer is younger than ``fetcher.soft404.probe.ttl``: a recrawl in
hourly rounds sends one probe a host a day, not one a round. updatedb takes a host's
template from the segment when the segment probed it, else from this cache.
"""

from __future__ import annotations

from crawldb import soft404
from crawldb.schema import SOFT404
from engine.runtime import write_behind
from engine.runtime.layout import DataDir, Segment
from engine.tables.delta_commits import upsert_hosts
from engine.tables.delta_files import is_delta_table, read_current
from engine.tables.driver_tables import arrow_table, is_plain
from lib.clock import now_ms
from lib.vocabulary import ORIGIN_PROBE


def fresh_since(conf, data: DataDir) -> int | None:
    """The oldest time (epoch ms) of a cached probe answer still fresh, or None when
    none can be (no cache, probes off, or ``fetcher.soft404.probe.ttl`` off)."""
    ttl = conf["fetcher.soft404.probe.ttl"]
    if not conf["fetcher.soft404.probe"] or ttl <= 0:
        return None
    write_behind.wait("soft404")  # the last round's answers
    if not is_delta_table(data.soft404):
        return None
    return now_ms() - ttl * 1000


def segment_answers(spark, segment: Segment):
    """The segment's answered probes, one a host, with parse's fingerprints of the
    answer (``crawldb.soft404.probe_answers``), as an Arrow table: its tables read
    through delta-rs, or by Spark (the probe rows and their fingerprints only) when
    delta-rs cannot read them plain."""
    from deltalake import DeltaTable

    fetch, parse = segment.table("fetch"), segment.table("parse")
    columns = ["url", "host", "fetched_at", "http_status", "origin"]
    if is_plain(fetch) and is_plain(parse):
        fetched = DeltaTable(fetch).to_pyarrow_table(columns=columns)
        prints = DeltaTable(parse).to_pyarrow_table(columns=["url", "content_hash", "simhash"])
        return soft404.probe_answers(fetched, prints)
    probes = read_current(spark, fetch).where(f"origin = '{ORIGIN_PROBE}'").select(*columns)
    prints = read_current(spark, parse).select("url", "content_hash", "simhash")
    prints = prints.join(probes.select("url"), "url", "left_semi")
    return soft404.probe_answers(probes.toArrow(), prints.toArrow())


def soft_404_templates(spark, conf, data: DataDir, segment: Segment) -> dict:
    """Host -> (content hash, SimHash) of its 200 answer to a path that cannot exist
    (``crawldb.soft404.templates``): the segment's own probe where it made one, else the
    cached answer. Empty when probing is off (the cache's older answers are not used
    either), or no host has such a template."""
    if not conf["fetcher.soft404.probe"]:
        return {}
    write_behind.wait("soft404")  # the last round's answers
    cached = None
    if is_plain(data.soft404):
        cached = arrow_table(data.soft404, SOFT404)
    elif is_delta_table(data.soft404):
        cached = read_current(spark, data.soft404).where("http_status = 200").toArrow()
    # Segments fetched before the count was kept have no figure: look for templates.
    in_segment = segment.summary("fetched").get("soft404_templates") != 0
    answers = segment_answers(spark, segment) if in_segment else None
    return soft404.templates(answers, cached)


def store_probes(spark, data: DataDir, segment: Segment) -> None:
    """Merge the segment's probe answers into the cache (newer answers replace older),
    through delta-rs."""
    from engine.tables.task_files import stored_schema

    message = f"trawl updatedb soft-404 cache segment={segment.name}"
    answers = segment_answers(spark, segment)
    if answers.num_rows:
        answers = answers.cast(stored_schema(SOFT404))
        upsert_hosts(data.soft404, answers, message, "s.probed_at >= t.probed_at")
