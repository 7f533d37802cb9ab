"""dedup on Spark against the local web: exact and near duplicates, and what is missed.

The test web's /copy/k is /page/k again; /near/k changes one three-word phrase of its 800
words. ``test_near_copy_recall_and_separation`` measures, over hosts 0-3 and pages 1-8,
how many near copies fall within the 3-bit distance (the rest are false negatives) and
that distinct pages stay farther apart (no false positive). The Spark test uses host 0's
/near/2 (1 bit away: found) and /near/5 (5 bits away: missed by the SimHash, found by
the MinHash sketch's resemblance).
"""

import pytest
from conftest import web_conf_args
from deltalake import DeltaTable

from engine.runtime.layout import DataDir
from jobs import crawl, dedup
from lib import vocabulary as st
from lib.config import load_config
from lib.content.fingerprint import hamming64
from lib.content.parse import parse_page

pytestmark = [pytest.mark.spark, pytest.mark.web]


@pytest.fixture(scope="module")
def deduped(spark, web, tmp_path_factory):
    root = tmp_path_factory.mktemp("dedup")
    base0, base1 = web.site.base(0), web.site.base(1)
    seeds = root / "seeds.txt"
    seeds.write_text(
        f"{base0}/page/2\tscore=2\n{base0}/copy/2\n{base0}/near/2\n{base0}/page/3\n"
        f"{base1}/page/2\n{base0}/page/5\tscore=2\n{base0}/near/5\n"
    )
    conf = web_conf_args("https://trawl.invalid/test-dedup", "db.max.depth=0")  # the seeds
    data = root / "data"
    assert crawl.main(["--seeds", str(seeds), "--rounds", "1", "--data", str(data), *conf]) == 0
    by_crawl = verdicts(spark, data)
    assert dedup.main(["--data", str(data)]) == 0
    rows = {r["url"]: r for r in spark.read.format("delta").load(str(data / "crawldb")).collect()}
    # crawl marked them in updatedb's commit (crawl.dedup): the full pass finds the same.
    assert by_crawl == {url: (r["status"], r["duplicate_of"]) for url, r in rows.items()}
    return DataDir.at(data), rows, base0, base1


def verdicts(spark, data) -> dict:
    """url -> (status, duplicate_of) of the crawldb's rows."""
    rows = spark.read.format("delta").load(str(data / "crawldb")).collect()
    return {r["url"]: (r["status"], r["duplicate_of"]) for r in rows}


def test_exact_and_near_duplicates_point_at_the_kept_copy(deduped):
    _, rows, base0, _ = deduped
    for copy in ("copy/2", "near/2"):
        assert rows[f"{base0}/{copy}"]["status"] == st.DUPLICATE
        assert rows[f"{base0}/{copy}"]["duplicate_of"] == f"{base0}/page/2"
    assert rows[f"{base0}/page/2"]["status"] == st.FETCHED


def test_no_false_positives(deduped):
    _, rows, base0, base1 = deduped
    for url in (f"{base0}/page/3", f"{base1}/page/2", f"{base0}/page/5"):
        assert rows[url]["status"] == st.FETCHED and rows[url]["duplicate_of"] is None


def page_simhash(web, host: int, path: str) -> int:
    body = web.site.respond(web.site.hosts[host], path).body
    return parse_page(f"http://x{path}", body, "text/html", load_config()).simhash


def test_a_near_copy_the_simhash_misses_is_found_by_resemblance(deduped, web):
    _, rows, base0, _ = deduped
    assert hamming64(page_simhash(web, 0, "/page/5"), page_simhash(web, 0, "/near/5")) == 5
    # 5 bits > dedup.simhash.distance: the MinHash sketch finds it (marked by crawl's
    # round pass, and kept so by the full pass).
    assert rows[f"{base0}/near/5"]["status"] == st.DUPLICATE
    assert rows[f"{base0}/near/5"]["duplicate_of"] == f"{base0}/page/5"


def test_near_copy_recall_and_separation(web):
    pages = [(h, k) for h in range(4) for k in range(1, 9)]
    near = [
        hamming64(page_simhash(web, h, f"/page/{k}"), page_simhash(web, h, f"/near/{k}"))
        for h, k in pages
    ]
    found = sum(1 for d in near if d <= 3)
    hashes = [page_simhash(web, h, f"/page/{k}") for h, k in pages]
    closest = min(hamming64(a, b) for i, a in enumerate(hashes) for b in hashes[i + 1 :])
    print(f"near copies within 3 bits: {found}/{len(near)}; distinct pages >= {closest} bits")
    assert found >= 0.75 * len(near)
    assert closest > 3


def test_dedup_again_changes_nothing(deduped, spark):
    data, rows, _, _ = deduped
    assert dedup.main(["--data", str(data.root)]) == 0
    again = {r["url"]: r for r in spark.read.format("delta").load(data.crawldb).collect()}
    assert {u: (r["status"], r["duplicate_of"]) for u, r in again.items()} == {
        u: (r["status"], r["duplicate_of"]) for u, r in rows.items()
    }


def test_the_rounds_pass_on_its_own_marks_what_updatedb_would(spark, web, tmp_path, deduped):
    """A round updated without its duplicates marked (updatedb alone, or a crawl killed
    in between) gets them from the pass of its own (``dedup_segment``, which crawl runs
    for such a segment): the same verdicts as crawl's in-commit pass."""
    _, marked, base0, base1 = deduped
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(
        f"{base0}/page/2\tscore=2\n{base0}/copy/2\n{base0}/near/2\n{base0}/page/3\n"
        f"{base1}/page/2\n{base0}/page/5\tscore=2\n{base0}/near/5\n"
    )
    data = DataDir.at(str(tmp_path / "data"))
    conf = web_conf_args("https://trawl.invalid/test-dedup-own-pass", "db.max.depth=0")
    off = [*conf, "--conf", "crawl.dedup=false"]
    assert crawl.main(["--seeds", str(seeds), "--rounds", "1", "--data", data.root, *off]) == 0
    before = spark.read.format("delta").load(data.crawldb).collect()
    assert not [r for r in before if r["status"] == st.DUPLICATE]
    (name,) = data.segment_names()
    cache = spark._jsparkSession.sharedState().cacheManager()
    assert cache.isEmpty()
    summary = dedup.dedup_segment(spark, load_config().as_dict(), data, name)
    # It releases what it cached: a crawl of many rounds in one session keeps no frame
    # (nor the broadcast tables of its plan) in Spark's cache.
    assert cache.isEmpty()
    rows = {r["url"]: r for r in spark.read.format("delta").load(data.crawldb).collect()}
    assert summary == {"duplicates": 3, "restored": 0}
    verdicts = {url: (r["status"], r["duplicate_of"]) for url, r in rows.items()}
    assert verdicts == {url: (r["status"], r["duplicate_of"]) for url, r in marked.items()}
    # Again on the same segment: the same copies are found, and none is new, so the
    # crawldb gets no commit.
    version = DeltaTable(data.crawldb).version()
    assert dedup.dedup_segment(spark, load_config().as_dict(), data, name) == summary
    assert DeltaTable(data.crawldb).version() == version


def test_the_spark_way_of_the_rounds_pass_marks_the_same(spark, web, tmp_path, deduped):
    """Above ``db.driver.urls``, ``crawl.dedup.driver.urls`` and
    ``crawl.dedup.driver.round`` crawl runs the round's rules by Spark's tasks
    (``engine.executors.duplicates.spark_verdicts``) instead of in the driver: the same
    verdicts."""
    _, marked, base0, base1 = deduped
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(
        f"{base0}/page/2\tscore=2\n{base0}/copy/2\n{base0}/near/2\n{base0}/page/3\n"
        f"{base1}/page/2\n{base0}/page/5\tscore=2\n{base0}/near/5\n"
    )
    data = tmp_path / "data"
    conf = web_conf_args(
        "https://trawl.invalid/test-dedup-spark-way",
        "db.max.depth=0",
        "crawl.dedup.driver.urls=0",
        "crawl.dedup.driver.round=0",
        "db.driver.urls=0",  # updatedb by Spark, its pass inside
    )
    assert crawl.main(["--seeds", str(seeds), "--rounds", "1", "--data", str(data), *conf]) == 0
    assert verdicts(spark, data) == {u: (r["status"], r["duplicate_of"]) for u, r in marked.items()}


def test_the_full_pass_by_sparks_tasks_marks_what_the_driver_marks(deduped, spark, tmp_path):
    """The same rules run by either executor: on a copy of the crawldb with its
    duplicates unmarked, the full pass in the driver and by Spark's tasks
    (``crawl.dedup.driver.urls=0``) mark the same pages as the crawl did."""
    import shutil

    data, rows, _, _ = deduped
    marked = {}
    for way, args in (("driver", []), ("spark", ["--conf", "crawl.dedup.driver.urls=0"])):
        copy = tmp_path / way
        shutil.copytree(data.root, copy)
        DeltaTable(str(copy / "crawldb")).update(
            predicate=f"status = '{st.DUPLICATE}'",
            updates={"status": f"'{st.FETCHED}'", "duplicate_of": "NULL"},
        )
        assert any(s == st.FETCHED for s, _ in verdicts(spark, copy).values())
        assert dedup.main(["--data", str(copy), *args]) == 0
        marked[way] = verdicts(spark, copy)
    expected = {url: (r["status"], r["duplicate_of"]) for url, r in rows.items()}
    assert marked["driver"] == marked["spark"] == expected
    assert sum(s == st.DUPLICATE for s, _ in expected.values()) >= 3
