"""The soft-404 probe cache beside the crawldb (``DIR/soft404``, one row per host).

The fetcher asks a host for a path that cannot exist to learn its "not found" page
(``fetcher.soft404.probe``). The answer changes rarely, so it is kept here by updatedb,
with the fingerprints parse computed for it, and a fetch round does not probe a host
again while its answer is younger than ``fetcher.soft404.probe.ttl``: a recrawl in
hourly rounds sends one probe a host a day, not one a round. updatedb takes a host's
template from the segment when the segment probed it, else from this cache.
"""

from __future__ import annotations

from crawldb.schema import SOFT404
from engine import write_behind
from engine.delta_commits import upsert_by_host, upsert_hosts
from engine.delta_files import is_delta_table, read_current
from engine.driver_tables import is_plain
from engine.layout import DataDir, Segment
from lib.clock import now_ms
from lib.vocabulary import ORIGIN_PROBE


def fresh_probes(spark, data: DataDir, conf):
    """The hosts whose cached probe answer is still fresh (column ``host``), or None
    when nothing can be."""
    from pyspark.sql import functions as F

    ttl = conf["fetcher.soft404.probe.ttl"]
    if not conf["fetcher.soft404.probe"] or ttl <= 0:
        return None
    write_behind.wait("soft404")  # the last round's answers
    if not is_delta_table(data.soft404):
        return None
    oldest = now_ms() - ttl * 1000
    table = read_current(spark, data.soft404)
    return table.where(F.unix_millis("probed_at") >= F.lit(oldest)).select("host")


def segment_probes(spark, segment: Segment):
    """The segment's answered probes, one row per host, with parse's fingerprints of the
    answer (NULL when parse kept none), as the cache stores them."""
    from pyspark.sql import functions as F

    probes = (
        read_current(spark, segment.table("fetch"))
        .where((F.col("origin") == ORIGIN_PROBE) & F.col("http_status").isNotNull())
        .select("url", "host", F.col("fetched_at").alias("probed_at"), "http_status")
    )
    parsed = read_current(spark, segment.table("parse"))
    fingerprints = parsed.select("url", "content_hash", "simhash")
    return probes.join(fingerprints, "url", "left").dropDuplicates(["host"]).select(*SOFT404.names)


def soft_404_templates(spark, conf, data: DataDir, segment: Segment):
    """Per host, the fingerprints of its 200 answer to a path that cannot exist
    (``_probe_hash``, ``_probe``): the segment's own probe where it made one, else the
    cached answer. None when no host has such a template, or probing is off (then the
    cache's older answers are not used either)."""
    from pyspark.sql import functions as F

    if not conf["fetcher.soft404.probe"]:
        return None
    # Segments fetched before the count was kept have no figure: look for templates.
    in_segment = segment.summary("fetched").get("soft404_templates") != 0
    cached = cached_templates(spark, data)
    if not in_segment and cached is None:
        return None
    answers = segment_probes(spark, segment)
    if cached is not None:
        answers = answers.unionByName(cached.join(answers.select("host"), "host", "left_anti"))
    return answers.where(F.col("http_status") == 200).select(
        "host", F.col("content_hash").alias("_probe_hash"), F.col("simhash").alias("_probe")
    )


def cached_templates(spark, data: DataDir):
    """The cache's rows of hosts that answered the probe with 200, or None if none did."""
    from pyspark.sql import functions as F

    write_behind.wait("soft404")  # the last round's answers
    if not is_delta_table(data.soft404):
        return None
    table = read_current(spark, data.soft404).select(*SOFT404.names)
    templates = table.where(F.col("http_status") == 200)
    return templates if templates.limit(1).count() else None


def store_probes(spark, data: DataDir, segment: Segment) -> None:
    """Merge the segment's probe answers into the cache (newer answers replace older):
    read and merged in the driver through delta-rs when its tables read plain."""
    message = f"trawl updatedb soft-404 cache segment={segment.name}"
    newer = "s.probed_at >= t.probed_at"
    if is_plain(segment.table("fetch")) and is_plain(segment.table("parse")):
        answers = probe_answers(segment)
        if answers.num_rows:
            upsert_hosts(data.soft404, answers, message, newer)
        return
    answers = segment_probes(spark, segment)
    upsert_by_host(spark, data.soft404, answers, SOFT404, message, newer)


def probe_answers(segment: Segment):
    """``segment_probes``' rows read through delta-rs, as an Arrow table of the cache's
    stored columns."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from engine.task_files import stored_schema

    columns = ["url", "host", "fetched_at", "http_status", "origin"]
    fetched = DeltaTable(segment.table("fetch")).to_pyarrow_table(columns=columns).to_pylist()
    probes = {}
    for row in fetched:
        if row["origin"] == ORIGIN_PROBE and row["http_status"] is not None:
            probes.setdefault(row["host"], row)
    parse = DeltaTable(segment.table("parse"))
    prints = {
        row["url"]: row
        for row in parse.to_pyarrow_table(columns=["url", "content_hash", "simhash"]).to_pylist()
    }
    rows = [
        {
            "host": host,
            "url": row["url"],
            "probed_at": row["fetched_at"],
            "http_status": row["http_status"],
            **{key: prints.get(row["url"], {}).get(key) for key in ("content_hash", "simhash")},
        }
        for host, row in probes.items()
    ]
    return pa.Table.from_pylist(rows, schema=stored_schema(SOFT404))
