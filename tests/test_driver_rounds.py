"""A round's jobs in the driver do what they do by Spark. updatedb in the driver
(engine.executors.driver_update) leaves the crawldb as updatedb by Spark does: each round of a
crawl of the test web that meets every rule of updatedb (copies and near copies, a
canonical, redirects, 404s, a soft-404 host, a sitemap index, spider traps against low
host and pattern caps, robots.txt) is applied again both ways to its crawldb as it was
before the round (Delta time travel), and the rows, the figures and the duplicate
verdicts agree. generate's one rule (crawldb.selection) run by each executor
(engine.executors.generate_plan) lists the
same URLs, with the same priorities, tiers and partitions, on the crawldb of each round,
with and without a budget, a per-domain cap and a clock days ahead.
"""

import shutil
from pathlib import Path

import pytest
from conftest import crawl_conf_args
from deltalake import DeltaTable

from crawldb.schema import CRAWLDB, FETCHLIST
from engine.executors.driver_update import in_driver
from engine.executors.freshness import freshness, freshness_of
from engine.runtime.layout import DataDir
from engine.tables import buckets
from engine.tables.driver_tables import python_rows
from jobs.updatedb import updatedb
from lib import vocabulary as st
from lib.config import load_config

pytestmark = pytest.mark.spark

# Set from the clock of the run (new URLs' due and discovery times): the two ways run
# seconds apart. Unit: ms.
STAMP_SLACK_MS = 120_000


# Low caps, so that the traps host's calendar and ids meet them in two rounds.
# A User-Agent of its own, so that its requests stay out of the end-to-end crawl's log.
CAPS = [
    "db.max.urls.per.host=12",
    "db.max.urls.per.pattern=3",
    "db.max.depth=2",
    "http.agent.url=https://trawl.invalid/test-driver-rounds",
]


def settings(driver_urls: int, *more: str):
    args = crawl_conf_args()
    overrides = [args[i + 1] for i in range(0, len(args), 2)]
    return load_config(overrides=[*overrides, *CAPS, f"db.driver.urls={driver_urls}", *more])


@pytest.fixture(scope="module")
def rounds(spark, web, tmp_path_factory) -> DataDir:
    """Two rounds of a crawl whose seeds reach each rule of updatedb."""
    from jobs import crawl

    root = tmp_path_factory.mktemp("driver-update")
    base = web.site.base
    traps, soft, maps = (base(web.site.host_with(r)) for r in ("traps", "soft404", "sitemaps"))
    seeds = [
        f"{base(0)}/page/2\tscore=2",
        *(f"{base(0)}/{kind}/2" for kind in ("copy", "near", "print")),
        f"{base(0)}/old-page",
        f"{base(0)}/no-such-page",
        f"{base(1)}/page/2",
        *(f"{traps}/{path}" for path in ("", "cal", "trailing/", "loopdir/")),
        f"{soft}/",
        f"{soft}/gone-away",
        f"{maps}/",
    ]
    (root / "seeds.txt").write_text("\n".join(seeds) + "\n")
    args = ["--seeds", str(root / "seeds.txt"), "--rounds", "2", "--data", str(root / "data")]
    args += crawl_conf_args()
    for setting in CAPS:  # after the end-to-end settings: the later wins
        args += ["--conf", setting]
    assert crawl.main(args) == 0
    return DataDir.at(root / "data")


def before_round(source: Path, name: str, target: Path) -> DataDir:
    """A copy of the data directory with its crawldb as it was before segment ``name``
    was applied, and the segment not marked updated."""
    shutil.copytree(source, target)
    table = DeltaTable(str(target / "crawldb"))
    label = f"trawl updatedb segment={name}"
    version = next(h["version"] for h in table.history() if h.get("userMetadata") == label)
    table.restore(version - 1)
    restore_before(target / "linkdb", f"trawl updatedb linkdb segment={name}")
    restore_before(target / "hostdb", f"trawl updatedb hostdb segment={name} ")
    for marker in ("_updated.done", "_deduped.done"):
        (target / "segments" / name / marker).unlink(missing_ok=True)
    return DataDir.at(target)


def bucketed(spark, data: DataDir, scratch: Path) -> None:
    """Write ``data``'s crawldb again as a new table of bucket files, as the crawldb a
    crawl of the Spark path has (``engine.tables.buckets``; before the round, a crawl
    of the driver's path left files of its own)."""
    from engine.tables.store import create_crawldb, read_crawldb

    assert buckets.layout(file_names(data)) is None
    rewritten = DataDir.at(scratch)
    create_crawldb(spark, rewritten, read_crawldb(spark, data), "test bucketed copy")
    shutil.rmtree(data.crawldb)
    shutil.move(rewritten.crawldb, data.crawldb)
    assert len(buckets.layout(file_names(data))[1]) > 1


def file_names(data: DataDir) -> list[str]:
    return [uri.rsplit("/", 1)[-1] for uri in DeltaTable(data.crawldb).file_uris()]


def restore_before(table: Path, label: str) -> None:
    """Restore the Delta table at ``table`` to its version before the commit whose label
    starts with ``label`` (none there: it was made by that commit)."""
    history = DeltaTable(str(table)).history()
    version = next(h["version"] for h in history if h.get("userMetadata", "").startswith(label))
    if version:
        DeltaTable(str(table)).restore(version - 1)
    else:
        shutil.rmtree(table)


def hostdb_rows(data: DataDir) -> list[dict]:
    """The hostdb's rows, the mean response time rounded (summed in another order)."""
    rows = DeltaTable(data.hostdb).to_pyarrow_table().to_pylist()
    for row in rows:
        if row["mean_response_ms"] is not None:
            row["mean_response_ms"] = round(row["mean_response_ms"], 6)
    return sorted(rows, key=lambda row: row["host"])


def rows_by_url(data: DataDir) -> dict:
    return {row["url"]: row for row in python_rows(data.crawldb, CRAWLDB)}


def linkdb_rows(data: DataDir) -> list[tuple]:
    """The linkdb's rows but their times (each way stamps its own)."""
    columns = ["url", "from_url", "from_host", "anchor", "first_segment", "last_segment"]
    table = DeltaTable(data.linkdb).to_pyarrow_table(columns=columns)
    return sorted(tuple(row.values()) for row in table.to_pylist())


def assert_same_rows(driver: dict, spark_way: dict) -> None:
    assert sorted(driver) == sorted(spark_way)
    for url, row in driver.items():
        other = spark_way[url]
        for column in CRAWLDB.names:
            a, b = row[column], other[column]
            if column in CRAWLDB.time_columns and None not in (a, b):
                assert abs(a - b) <= STAMP_SLACK_MS, (url, column, a, b)
            elif isinstance(a, float) and b is not None:
                assert a == pytest.approx(b, rel=1e-9), (url, column)
            elif column == "metadata":
                assert dict(a or ()) == dict(b or ()), url
            else:
                assert a == b, (url, column, a, b)


def test_each_round_applied_in_the_driver_equals_spark(spark, rounds, tmp_path, monkeypatch):
    data = rounds
    monkeypatch.setattr(buckets, "BUCKET_ROWS", 2)  # the bucketed copy in several files
    names = data.segment_names()
    assert len(names) == 2
    # The crawl met every rule the comparison is to cover.
    final = rows_by_url(data).values()
    assert any(row["reason"] == "soft_404" for row in final)
    assert any(row["status"] == st.DUPLICATE for row in final)
    assert any(row["status"] == st.REDIR_PERM for row in final)
    assert any("/hidden/" in row["url"] for row in final)  # listed by a sitemap only
    for name in names:
        ways = {}
        for way, limit in (("driver", 200_000), ("spark", 0), ("buckets", 0)):
            copy = before_round(Path(data.root), name, tmp_path / f"{name}-{way}")
            if way == "buckets":
                bucketed(spark, copy, tmp_path / f"{name}-rewritten")
            assert in_driver(settings(limit).as_dict(), copy, copy.segment(name)) == bool(limit)
            summary = updatedb(spark, settings(limit), copy, copy.segment(name), dedup=True)
            deduped = copy.segment(name).summary("deduped")
            ways[way] = (copy, summary, deduped)
        # updatedb by Spark on a bucketed crawldb merges by bucket, and keeps it bucketed.
        by_buckets, bucket_summary, bucket_dedup = ways.pop("buckets")
        assert buckets.layout(file_names(by_buckets)) is not None, name
        assert_same_rows(rows_by_url(ways["spark"][0]), rows_by_url(by_buckets))
        assert {k: bucket_summary[k] for k in ("changed", "new", "crawldb", "rejected")} == {
            k: ways["spark"][1][k] for k in ("changed", "new", "crawldb", "rejected")
        }, name
        assert bucket_dedup == ways["spark"][2] | {"seconds": bucket_dedup["seconds"]}, name
        (driver, summary, deduped), (spark_way, expected, expected_dedup) = ways.values()
        assert summary["changed"] > 0, name
        assert sum(summary["rejected"].values()) > 0, name
        for key in ("changed", "new", "crawldb", "rejected", "opted_out_removed", "inlinks"):
            assert summary[key] == expected[key], (name, key)
        for key in ("urls", "pages", "age_days"):
            assert summary["freshness"][key] == expected["freshness"][key], (name, key)
        assert deduped["duplicates"] == expected_dedup["duplicates"], name
        assert deduped["restored"] == expected_dedup["restored"], name
        assert_same_rows(rows_by_url(driver), rows_by_url(spark_way))
        assert summary["inlinks"] > 0, name
        assert linkdb_rows(driver) == linkdb_rows(spark_way), name
        assert summary["hosts_updated"] == expected["hosts_updated"] > 0, name
        assert hostdb_rows(driver) == hostdb_rows(spark_way), name
        versions = [DeltaTable(d.crawldb).version() for d in (driver, spark_way)]
        assert versions[0] == versions[1], name  # one commit each


def test_freshness_in_python_equals_sparks(spark, rounds):
    data = rounds
    crawldb = spark.read.format("delta").load(data.crawldb)
    rows = python_rows(data.crawldb, CRAWLDB)
    columns = ("status", "fetch_time", "fetch_interval", "last_fetch_time")
    tuples = [tuple(row[c] for c in columns) for row in rows]
    # Between its earliest due time and the latest: some due, some not, some overdue.
    for now in sorted({t[1] for t in tuples if t[1] is not None})[:: max(1, len(tuples) // 5)]:
        assert freshness_of(tuples, now) == freshness(crawldb, now), now


GENERATE_CASES = {
    "defaults": [],
    "budget and caps": [
        "generate.topN=9",
        "generate.max.count=3",
        "generate.count.mode=domain",
        "fetcher.timelimit.mins=0.2",
    ],
}


@pytest.mark.parametrize("case", GENERATE_CASES)
def test_generate_in_the_driver_lists_what_spark_lists(spark, rounds, tmp_path, case):
    from jobs.generate import generate

    data = rounds
    versions = DeltaTable(data.crawldb).version()
    compared = 0
    for version in range(1, versions + 1):
        for add_days in (0.0, 40.0):
            lists = {}
            for way, limit in (("driver", 200_000), ("spark", 0)):
                copy = tmp_path / f"{version}-{add_days}-{way}"
                shutil.copytree(data.root, copy)
                if version < versions:
                    DeltaTable(str(copy / "crawldb")).restore(version)
                conf = settings(limit, *GENERATE_CASES[case])
                name = generate(spark, conf, DataDir.at(copy), add_days)
                lists[way] = fetchlist_rows(DataDir.at(copy), name)
                # Spark's way releases the frames it cached: a crawl keeps none.
                assert spark._jsparkSession.sharedState().cacheManager().isEmpty(), way
            assert_same_fetchlists(lists["driver"], lists["spark"], (version, add_days))
            compared += len(lists["driver"])
    assert compared > 0


def fetchlist_rows(data: DataDir, name) -> dict:
    if name is None:
        return {}
    return {
        row["url"]: row for row in python_rows(data.segment(name).table("fetchlist"), FETCHLIST)
    }


def assert_same_fetchlists(driver: dict, spark_way: dict, where) -> None:
    assert sorted(driver) == sorted(spark_way), where
    for url, row in driver.items():
        for column in FETCHLIST.names:
            a, b = row[column], spark_way[url][column]
            if isinstance(a, float):
                # The two ways read the clock seconds apart: staleness moves a little.
                assert a == pytest.approx(b, rel=1e-6), (where, url, column)
            else:
                assert a == b, (where, url, column, a, b)


SEEDS = (
    "# comment line\r\n"
    "{base}/page/1\tscore=2.5\tfetchInterval=3600\r\n"
    "{base}/page/2\tnutch.fixedFetchInterval=true\ttopic=news\n"
    "not a url\n"
    "\n"
    "{base}/page/1\n"  # given twice: the first line counts
    "{base}/page/3 with space\n"
    "ftp://elsewhere.invalid/file\n"
    "{base}/Page/4?b=2&a=1#frag\r"
    "{base}/page/5\tbroken field\n"
)


@pytest.mark.parametrize("update", [False, True])
def test_inject_in_the_driver_injects_what_spark_injects(spark, rounds, tmp_path, capsys, update):
    """Into a new crawldb, then into the crawled one (URLs with history, re-injected
    with and without ``db.injector.update``): the same rows, counts and messages."""
    from jobs.inject import inject

    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(SEEDS.format(base=known_base(rounds)).encode())
    said = {}
    for way, limit in (("driver", 200_000), ("spark", 0)):
        conf = settings(limit, f"db.injector.update={str(update).lower()}")
        fresh = DataDir.at(tmp_path / f"new-{way}")
        assert inject(spark, conf, fresh, str(seeds)) == 0
        crawled = tmp_path / f"crawled-{way}"
        shutil.copytree(rounds.root, crawled)
        assert inject(spark, conf, DataDir.at(crawled), str(seeds)) == 0
        said[way] = capsys.readouterr()
    for name in ("new", "crawled"):
        driver = rows_by_url(DataDir.at(tmp_path / f"{name}-driver"))
        assert_same_rows(driver, rows_by_url(DataDir.at(tmp_path / f"{name}-spark")))
    assert said["driver"].out == said["spark"].out
    assert said["driver"].err == said["spark"].err
    assert said["driver"].out.count("inject: 3 urls, 4 malformed lines") == 2


def known_base(data: DataDir) -> str:
    """The scheme and authority of the crawl's first host (ring host 0)."""
    url = min(rows_by_url(data))
    return url[: url.index("/", len("http://"))]


def test_fetch_work_in_the_driver_is_sparks(spark, rounds, monkeypatch):
    """The fetch tasks' work rows (the list, cached robots.txt and probes, URLs fetched
    before, hosts in their pause) put together in the driver are those Spark's tasks put
    together by the same rule (``crawldb.fetch_work``)."""
    from crawldb.fetch_work import WORK_COLUMNS
    from engine.executors.fetch_work import in_driver, spark_work, work_table
    from lib.clock import now_ms

    # One clock for both ways: which hosts are still in their pause depends on it, and
    # a pause may end between the two.
    frozen = now_ms()
    monkeypatch.setattr("engine.caches.fetch_pacing.now_ms", lambda: frozen)

    conf = settings(200_000).as_dict()
    names = [name for name, _ in WORK_COLUMNS if name != "not_before"]
    for name in rounds.segment_names():
        segment = rounds.segment(name)
        assert in_driver(conf, rounds, segment)
        by_spark = spark_work(spark, conf, rounds, segment, 2)
        expected = sorted(repr(plain(r[n] for n in names)) for r in by_spark.collect())
        driver = work_table(conf, rounds, segment).to_pylist()
        assert any(row.get("robots_status") is not None for row in driver)
        assert any(row.get("known_url") is not None for row in driver)
        assert any(row.get("url") is not None for row in driver)
        got = sorted(repr(plain(row.get(n) for n in names)) for row in driver)
        assert got == expected, name


def plain(values) -> tuple:
    """Values comparable across Spark's rows and Arrow's: binary as bytes."""
    return tuple(bytes(v) if isinstance(v, bytearray) else v for v in values)
