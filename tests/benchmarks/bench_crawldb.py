"""Scale of the crawldb: generate and updatedb on synthetic crawldbs of 1M, 3M, 10M URLs.

For each size N the benchmark writes a synthetic crawldb (by Trawl's own writer, as
inject writes it, for the ``zstd`` layout; 100 URLs per host, 30 %
fetched with hash, SimHash and title, 65 % unfetched, 5 % gone or redirected) and a
synthetic parsed segment of 100k fetched pages -- URLs of the crawldb that were due --
each with 10 outlinks to URLs not in the crawldb (1M new outlinks). It then times

* ``generate`` (topN 100k) over the crawldb, and
* ``updatedb`` of the segment (100k rows updated, 1M inserted, one Delta MERGE),
* the round's dedup pass (``crawl.dedup``: the 100k pages, 2,000 of them exact and 2,000
  near copies of earlier pages, against the whole crawldb, by SHA-256 and MinHash bands)
  two ways side by side, on two copies of the same crawldb: as a pass of its own after
  updatedb (``dedup_segment``: its own read and MERGE), and inside updatedb's commit
  (crawl's way: its steps timed by updatedb, and updatedb's whole time beside the
  other copy's),

with Trawl's own job functions, and reports the crawldb's bytes per URL on disk before
and after. Layouts are compared side by side at the smallest size (``--layouts``):

* ``plain``: Spark and Delta defaults (snappy Parquet, MERGE rewrites every file it
  touches);
* ``zstd``: Parquet pages compressed with zstd (``spark.sql.parquet.compression.codec``),
  Trawl's default since this benchmark;
* ``dv``: zstd plus deletion vectors (MERGE marks replaced rows instead of rewriting
  the files they are in);
* ``zorder``: zstd plus ``OPTIMIZE ... ZORDER BY (host)`` after updatedb (timed apart).

Run: ``.venv/bin/python tests/benchmarks/bench_crawldb.py [--sizes 1000000 3000000
10000000] [--layouts plain zstd dv zorder] [--work /tmp/trawl-bench-crawldb]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from crawldb.schema import CRAWLDB, FETCH, FETCHLIST, PARSE  # noqa: E402
from engine.runtime.layout import DataDir  # noqa: E402
from engine.runtime.session import build_spark  # noqa: E402
from lib.config import load_config  # noqa: E402

URLS_PER_HOST = 100
SEGMENT_PAGES = 100_000
OUTLINKS_PER_PAGE = 10
SEGMENT = "20261130000000"  # the synthetic segment
COPIES = 2_000  # exact copies of earlier pages in the segment, and as many near copies
TOPN = 100_000
DAY_MS = 86_400_000
NOW_MS = 1_796_000_000_000  # the crawl's clock: 2026-11-30
SECTIONS = "news sport business tech culture travel science opinion health video".split()

LAYOUTS = {
    "plain": {"spark.sql.parquet.compression.codec": "snappy"},  # Spark's default
    "zstd": {"spark.sql.parquet.compression.codec": "zstd"},
    "dv": {
        "spark.sql.parquet.compression.codec": "zstd",
        "spark.databricks.delta.properties.defaults.enableDeletionVectors": "true",
    },
    "zorder": {"spark.sql.parquet.compression.codec": "zstd"},
}


def sketch_of(column):
    """64 bytes of hash standing for a page's MinHash sketch (no two pages near)."""
    from pyspark.sql import functions as F

    halves = [F.sha2(F.concat(column, F.lit(part)), 256) for part in ("m1", "m2")]
    return F.unhex(F.concat(*halves))


def crawldb_frame(spark, size: int, domains: int = 1):
    """``size`` synthetic crawldb rows with the table's schema, their hosts under
    ``domains`` registered domains (0: a domain a host)."""
    from pyspark.sql import functions as F

    hosts = max(1, size // URLS_PER_HOST)
    ids = spark.range(size)
    host_id = F.pmod(F.xxhash64("id"), F.lit(hosts))
    section = F.element_at(
        F.array(*[F.lit(s) for s in SECTIONS]), (F.col("id") % 10 + 1).cast("int")
    )
    kind = F.pmod(F.xxhash64("id", F.lit("kind")), F.lit(100))
    fetched = kind < 30
    domain = host_id if domains == 0 else F.pmod(host_id, F.lit(domains))
    named = F.concat(F.lit(".d"), domain.cast("string"), F.lit(".com"))
    suffix = F.lit(".example.com") if domains == 1 else named
    host = F.concat(F.lit("www.site"), host_id.cast("string"), suffix)
    path = F.concat(
        F.lit("/"), section, F.lit("/2026/article-"), F.col("id").cast("string"), F.lit(".html")
    )
    ms = F.lit(NOW_MS) - F.pmod(F.xxhash64("id", F.lit("t")), F.lit(60 * DAY_MS))

    def when_fetched(value, otherwise=None):
        return F.when(fetched, value).otherwise(otherwise)

    columns = {
        "url": F.concat(F.lit("https://"), host, path),
        "dedup_key": F.concat(F.lit("https://"), F.regexp_replace(host, "^www\\.", ""), path),
        "host": host,
        "status": F.when(fetched, "fetched")
        .when(kind < 95, "unfetched")
        .when(kind < 98, "gone")
        .otherwise("redir_perm"),
        "reason": F.when(kind >= 95, F.when(kind < 98, "http_404").otherwise("http_301")),
        "fetch_time": F.timestamp_millis(F.when(fetched, ms + 30 * DAY_MS).otherwise(ms)),
        "next_fetch_time": F.timestamp_millis(F.when(fetched, ms + 30 * DAY_MS).otherwise(ms)),
        "last_fetch_time": F.timestamp_millis(when_fetched(ms)),
        "modified_time": F.timestamp_millis(when_fetched(ms)),
        "fetch_interval": F.lit(2_592_000),
        "fixed_interval": F.lit(False),
        "retries": F.lit(0),
        "fetch_count": when_fetched(F.lit(1), F.lit(0)),
        "score": F.lit(1.0) / (F.col("id") % 50 + 1),
        "pagerank": F.lit(None).cast("double"),
        "depth": (F.col("id") % 6).cast("int"),
        "http_status": when_fetched(F.lit(200)),
        "content_hash": when_fetched(F.sha2(F.col("id").cast("string"), 256)),
        "simhash": when_fetched(F.xxhash64("id", F.lit("simhash"))),
        # 64 bytes of a hash: sketches of distinct pages (none near another)
        "minhash": when_fetched(
            F.unhex(
                F.concat(
                    F.sha2(F.concat(F.col("id").cast("string"), F.lit("m1")), 256),
                    F.sha2(F.concat(F.col("id").cast("string"), F.lit("m2")), 256),
                )
            )
        ),
        "etag": F.lit(None).cast("string"),
        "last_modified": F.lit(None).cast("string"),
        "last_modified_time": F.lit(None).cast("timestamp"),
        "content_type": when_fetched(F.lit("text/html")),
        "title": when_fetched(
            F.concat(F.lit("Article "), F.col("id").cast("string"), F.lit(" on "), section)
        ),
        "redirect_to": F.lit(None).cast("string"),
        "duplicate_of": F.lit(None).cast("string"),
        "canonical": F.lit(None).cast("string"),
        "change_count": when_fetched(F.lit(0)),
        "revisit_count": when_fetched(F.lit(0)),
        "generate_time": F.lit(None).cast("timestamp"),
        "segment": when_fetched(F.lit("20261101000000")),
        "capture_segment": when_fetched(F.lit("20261101000000")),
        "warc_file": when_fetched(F.lit("trawl-20261101000000-00000.warc.gz")),
        "warc_offset": when_fetched(F.col("id") * 4000),
        "capture_record_id": when_fetched(F.concat(F.lit("<urn:uuid:"), F.uuid(), F.lit(">"))),
        "capture_time": F.timestamp_millis(when_fetched(ms)),
        "payload_digest": when_fetched(F.sha2(F.col("id").cast("string"), 224)),
        "discovered_time": F.timestamp_millis(ms - 30 * DAY_MS),
        "metadata": F.lit(None).cast("map<string,string>"),
    }
    assert list(columns) == CRAWLDB.names
    return ids.select(
        *[
            value.cast(kind).alias(name)
            for (name, kind), value in zip(CRAWLDB.columns, columns.values(), strict=True)
        ]
    )


def write_segment(spark, data: DataDir, crawldb) -> str:
    """A parsed segment of ``SEGMENT_PAGES`` pages of the crawldb, due and unfetched,
    each linking to ``OUTLINKS_PER_PAGE`` URLs that are not in the crawldb."""
    from pyspark.sql import functions as F

    name = SEGMENT
    segment = data.segment(name)
    chosen = crawldb.where("status = 'unfetched'").limit(SEGMENT_PAGES).cache()
    fetchlist = chosen.select(
        "url",
        "host",
        "status",
        "score",
        "depth",
        "etag",
        "last_modified",
        "payload_digest",
        "capture_time",
        "capture_segment",
        "capture_record_id",
        F.lit(0.5).alias("priority"),
        F.lit("medium").alias("tier"),
        F.lit(0).alias("partition"),
    )
    fetchlist.select(*FETCHLIST.names).write.format("delta").save(segment.table("fetchlist"))
    at = F.timestamp_millis(F.lit(NOW_MS))
    fetch = chosen.select(
        "url",
        "host",
        F.lit("success").alias("fetch_status"),
        F.lit(None).cast("string").alias("reason"),
        F.lit(200).alias("http_status"),
        at.alias("fetched_at"),
        F.lit(120).alias("duration_ms"),
        F.lit("text/html").alias("content_type"),
        F.lit(None).cast("binary").alias("content"),
        F.lit(20_000).alias("content_length"),
        F.lit(False).alias("truncated"),
        F.lit(None).cast("map<string,string>").alias("headers"),
        F.lit(None).cast("string").alias("etag"),
        F.lit(None).cast("string").alias("last_modified"),
        F.lit(None).cast("string").alias("redirect_to"),
        "depth",
        "score",
        F.lit("fetchlist").alias("origin"),
        F.lit(1).alias("attempts"),
        F.lit(None).cast("string").alias("error_detail"),
        F.lit("192.0.2.1").alias("ip"),
        F.lit("trawl-x.warc.gz").alias("warc_file"),
        F.lit(0).cast("bigint").alias("warc_offset"),
        F.lit(None).cast("string").alias("warc_record_id"),
        F.sha2(F.col("url"), 224).alias("payload_digest"),
    )
    fetch.select(*FETCH.names).write.format("delta").save(segment.table("fetch"))
    links = F.transform(
        F.sequence(F.lit(1), F.lit(OUTLINKS_PER_PAGE)),
        lambda k: F.struct(
            F.concat(
                F.lit("https://"),
                F.col("host"),
                F.lit("/new/"),
                # A slug of letters: each new URL its own pattern (no trap-defence caps).
                F.translate(
                    F.sha2(F.concat(F.col("url"), k.cast("string")), 224).substr(1, 16),
                    "0123456789abcdef",
                    "ghijklmnopqrstuv",
                ),
                F.lit(".html"),
            ).alias("url"),
            F.lit("more").alias("anchor"),
            F.lit(None).cast("string").alias("rel"),
        ),
    )
    parse = with_copies(chosen, crawldb).select(
        "url",
        F.lit("success").alias("parse_status"),
        F.lit(None).cast("string").alias("reason"),
        F.lit("A page").alias("title"),
        F.lit(None).cast("string").alias("description"),
        F.lit("en").alias("language"),
        F.lit(None).cast("string").alias("canonical"),
        F.array().cast("array<string>").alias("feeds"),
        F.lit("utf-8").alias("encoding"),
        F.lit("header").alias("encoding_source"),
        F.lit("text").alias("text"),
        "content_hash",
        "simhash",
        "minhash",
        links.alias("outlinks"),
        F.create_map().cast("map<string,int>").alias("links_rejected"),
        F.lit(None).cast("string").alias("robots"),
        F.create_map().cast("map<string,string>").alias("metadata"),
    )
    parse.select(*PARSE.names).write.format("delta").save(segment.table("parse"))
    chosen.unpersist()
    segment.mark("generated", {"urls": SEGMENT_PAGES, "partitions": 1})
    segment.mark("fetched", {"pages": SEGMENT_PAGES})
    segment.mark("parsed", {"pages": SEGMENT_PAGES, "sitemap_urls": 0})
    return name


def with_copies(chosen, crawldb):
    """The segment's pages with their fingerprints: distinct pages, but for
    ``COPIES`` exact copies of pages fetched before (the same hashes) and as many near
    copies (one MinHash band and one SimHash bit changed), so that the round's dedup
    pass finds duplicates and writes them, as a real round does."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.orderBy("url")
    pages = chosen.withColumn("_n", F.row_number().over(order))
    fetched = crawldb.where("status = 'fetched'").select(
        F.col("content_hash").alias("_hash"),
        F.col("simhash").alias("_simhash"),
        F.col("minhash").alias("_minhash"),
    )
    sources = fetched.limit(2 * COPIES).withColumn(
        "_n", F.row_number().over(Window.orderBy("_hash"))
    )
    pages = pages.join(sources, "_n", "left")
    exact, near = F.col("_n") <= COPIES, F.col("_n") <= 2 * COPIES
    # The first band replaced by bytes of the page's own (no band shared by all copies).
    edited = F.concat(
        F.unhex(F.sha2(F.col("url"), 224)).substr(1, 4), F.substring("_minhash", 5, 60)
    )
    own_sketch = F.unhex(
        F.concat(
            F.sha2(F.concat(F.col("url"), F.lit("m1")), 256),
            F.sha2(F.concat(F.col("url"), F.lit("m2")), 256),
        )
    )
    return pages.select(
        *[c for c in chosen.columns if c not in ("content_hash", "simhash", "minhash")],
        F.when(exact, F.col("_hash")).otherwise(F.sha2(F.col("url"), 256)).alias("content_hash"),
        F.when(exact, F.col("_simhash"))
        .when(near, F.col("_simhash").bitwiseXOR(F.lit(1)))
        .otherwise(F.xxhash64("url"))
        .alias("simhash"),
        F.when(exact, F.col("_minhash")).when(near, edited).otherwise(own_sketch).alias("minhash"),
    )


def build_crawldb(spark, data: DataDir, rows, layout: str, target_files: int) -> None:
    """The synthetic crawldb written as Trawl's inject writes it (its own writer: a
    bucketed crawldb, ``engine.tables.buckets``) for Trawl's layout, ``zstd``; by
    Spark's Delta writer for the others, whose table properties are Spark's."""
    if layout != "zstd":
        rows.repartition(target_files).write.format("delta").save(data.crawldb)
        return
    try:
        from engine.tables.store import create_crawldb
    except ImportError:  # a Trawl before engine/ was split into packages, to compare
        from engine.store import create_crawldb
    create_crawldb(spark, data, rows, "bench crawldb")


def live_bytes(spark, path: str) -> int:
    """Bytes of the files in the table's current version (older versions left out)."""
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    return int(detail["sizeInBytes"]), int(detail["numFiles"])


def run_one(size: int, layout: str, work: Path, conf, domains: int = 1) -> dict:
    from delta.tables import DeltaTable

    from jobs.dedup import dedup_segment
    from jobs.generate import generate
    from jobs.updatedb import updatedb

    spark = build_spark("bench-crawldb", conf)
    for key, value in LAYOUTS[layout].items():
        spark.conf.set(key, value)
    for key in set().union(*LAYOUTS.values()) - set(LAYOUTS[layout]):
        spark.conf.unset(key)
    folder = work / f"{layout}-{size}"
    shutil.rmtree(folder, ignore_errors=True)
    data = DataDir.at(folder, conf)
    figures = {"size": size, "layout": layout, "domains": domains}

    started = time.perf_counter()
    target_files = max(2, size // 1_000_000 * 2)
    build_crawldb(spark, data, crawldb_frame(spark, size, domains), layout, target_files)
    figures["build_s"] = round(time.perf_counter() - started, 1)
    figures["bytes_per_url"], figures["files"] = _per_url(spark, data.crawldb, size)

    write_segment(spark, data, spark.read.format("delta").load(data.crawldb))

    started = time.perf_counter()
    name = generate(spark, conf, data, 0.0)
    figures["generate_s"] = round(time.perf_counter() - started, 1)
    figures["generated"] = data.segment(name).summary("generated")["urls"]

    # The round's dedup side by side on two copies of the same crawldb and segment:
    # crawl's pass inside updatedb's commit, and the separate pass (updatedb, then
    # dedup_segment's own read and MERGE) that crawl runs for a segment updated without.
    twin = folder.with_name(folder.name + "-inside")
    shutil.rmtree(twin, ignore_errors=True)
    inside = DataDir.at(shutil.copytree(folder, twin), conf)
    started = time.perf_counter()
    summary = updatedb(spark, conf, data, data.segment(SEGMENT))
    figures["updatedb_s"] = round(time.perf_counter() - started, 1)
    figures["updatedb_changed"] = summary["changed"]
    figures["updatedb_new"] = summary["new"]
    after = summary["crawldb"]
    figures["bytes_per_url_after"], figures["files_after"] = _per_url(spark, data.crawldb, after)
    started = time.perf_counter()
    marked = dedup_segment(spark, conf.as_dict(), data, SEGMENT)
    figures["dedup_s"] = round(time.perf_counter() - started, 1)
    figures["dedup_marked"] = marked["duplicates"]
    started = time.perf_counter()
    updatedb(spark, conf, inside, inside.segment(SEGMENT), dedup=True)
    figures["updatedb_dedup_s"] = round(time.perf_counter() - started, 1)
    own = inside.segment(SEGMENT).summary("deduped")
    figures["inside_dedup_s"], figures["inside_marked"] = own["seconds"], own["duplicates"]
    shutil.rmtree(inside.root, ignore_errors=True)
    if layout == "zorder":
        started = time.perf_counter()
        DeltaTable.forPath(spark, data.crawldb).optimize().executeZOrderBy("host")
        figures["zorder_s"] = round(time.perf_counter() - started, 1)
        figures["bytes_per_url_zorder"], figures["files_zorder"] = _per_url(
            spark, data.crawldb, after
        )
        started = time.perf_counter()
        generate(spark, conf, data, 0.0)
        figures["generate_after_zorder_s"] = round(time.perf_counter() - started, 1)
    shutil.rmtree(folder, ignore_errors=True)
    return figures


def _per_url(spark, path: str, urls: int) -> tuple[float, int]:
    size, files = live_bytes(spark, path)
    return round(size / urls, 1), files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 3_000_000, 10_000_000])
    parser.add_argument("--layouts", nargs="+", default=["plain", "zstd", "dv", "zorder"])
    parser.add_argument("--layout", default="dv", help="layout used for the larger sizes")
    parser.add_argument("--work", type=Path, default=Path("/tmp/trawl-bench-crawldb"))
    parser.add_argument(
        "--domains",
        type=int,
        default=1,
        help="registered domains the hosts are under (1: all under example.com, as a"
        " large site's hosts are; 0: a domain a host)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("TRAWL_DRIVER_MEMORY", "8g")
    # Spark's Python workers import Trawl by PYTHONPATH, else through the editable
    # install (the main checkout): a checkout of other code (a worktree, to compare) must
    # be the one its workers run too.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    conf = load_config(
        overrides=[
            f"generate.topN={TOPN}",
            "spark.ui.enabled=false",
            "spark.driver.memory=8g",
            "spark.sql.shuffle.partitions=16",
        ]
    )
    results = []
    for layout in args.layouts:
        results.append(run_one(args.sizes[0], layout, args.work, conf, args.domains))
        print(json.dumps(results[-1]), flush=True)
    for size in args.sizes[1:]:
        results.append(run_one(size, args.layout, args.work, conf, args.domains))
        print(json.dumps(results[-1]), flush=True)
    print_table(results)
    return 0


def print_table(results: list[dict]) -> None:
    print(
        "\nsize        layout  build s  generate s  updatedb s  separate dedup s  share"
        "  updatedb+dedup s  dedup inside s  share  marked  bytes/URL before  after  files"
    )
    for r in results:
        separate = r["dedup_s"] / r["updatedb_s"]
        # Its share of the updatedb it rides in: its own steps against the rest.
        inside = r["inside_dedup_s"] / (r["updatedb_dedup_s"] - r["inside_dedup_s"])
        marked = f"{r['dedup_marked']}/{r['inside_marked']}"
        print(
            f"{r['size']:>10,}  {r['layout']:<6}  {r['build_s']:>7}  {r['generate_s']:>10}  "
            f"{r['updatedb_s']:>10}  {r['dedup_s']:>16}  {separate:>5.0%}  "
            f"{r['updatedb_dedup_s']:>16}  {r['inside_dedup_s']:>14}  {inside:>5.0%}  "
            f"{marked:>6}  {r['bytes_per_url']:>16}  {r['bytes_per_url_after']:>5}  "
            f"{r['files_after']:>5}"
        )
    base = [r for r in results if r["layout"] == results[-1]["layout"]]
    if len(base) > 1:
        first = base[0]
        for r in base[1:]:
            growth = r["size"] / first["size"]
            print(
                f"{r['size']:,} vs {first['size']:,} URLs ({growth:.0f}x): generate "
                f"{r['generate_s'] / first['generate_s']:.2f}x, updatedb "
                f"{r['updatedb_s'] / first['updatedb_s']:.2f}x"
            )


if __name__ == "__main__":
    sys.exit(main())
