"""De-duplication judged on a news web of realistic text (testweb.news): over 10,000
distinct articles whose sentences come from a shared pool, with exact copies (?ref=,
/index.html), near copies with one sentence changed, added or removed, and the same
article republished under two other sites' chrome. One crawl round (crawl marks the
round's duplicates, crawl.dedup), then the full dedup pass, which must change nothing.
Prints recall by case and false duplicates among the distinct pages."""

import pytest
from conftest import TEST_SERVER_DELAY, web_conf_args

from jobs import crawl, dedup
from lib import vocabulary as st
from testweb.server import TestWeb, loopback_hosts

pytestmark = [pytest.mark.spark, pytest.mark.web]
HOSTS = 50
ARTICLES = 205  # 50 x 205 = 10,250 distinct articles


@pytest.fixture(scope="module")
def news(tmp_path_factory):
    log = tmp_path_factory.mktemp("newsweb") / "requests.jsonl"
    server = TestWeb(
        loopback_hosts(HOSTS, subnet=60), 0, log, crawl_delay=0.0, news_articles=ARTICLES
    )
    server.start()
    yield server
    server.stop()


def statuses(spark, data):
    rows = (
        spark.read.format("delta")
        .load(str(data / "crawldb"))
        .select("url", "status", "duplicate_of")
    )
    return {r["url"]: (r["status"], r["duplicate_of"]) for r in rows.collect()}


@pytest.fixture(scope="module")
def news_crawl(spark, news, tmp_path_factory):
    root = tmp_path_factory.mktemp("newsdedup")
    corpus = news.site.news
    clusters = corpus.clusters()
    urls = corpus.all_urls()
    seeds = root / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in urls))
    data = root / "data"
    conf = web_conf_args(
        "https://trawl.invalid/test-dedup-quality",
        "db.max.depth=0",
        "fetcher.soft404.probe=false",
        "fetcher.round.tail.defer=false",
        delay=TEST_SERVER_DELAY / 10,
    )
    assert crawl.main(["--seeds", str(seeds), "--rounds", "1", "--data", str(data), *conf]) == 0
    after_round = statuses(spark, data)
    assert dedup.main(["--data", str(data), *conf]) == 0
    return corpus, clusters, after_round, statuses(spark, data)


def test_every_page_was_fetched(news_crawl):
    corpus, clusters, rows, _ = news_crawl
    listed = set(corpus.distinct_urls()) | {u for g in clusters.values() for c in g for u in c}
    assert all(rows[u][0] in (st.FETCHED, st.DUPLICATE) for u in listed)
    assert len(corpus.distinct_urls()) >= 10_000
    assert len(clusters["sentence"]) + len(clusters["chrome"]) >= 200


def kept_one(cluster, rows) -> bool:
    kept = [u for u in cluster if rows[u][0] != st.DUPLICATE]
    return len(kept) == 1 and all(rows[u][1] == kept[0] for u in cluster if u != kept[0])


def test_near_and_exact_copies_keep_exactly_one(news_crawl):
    _, clusters, after_round, after_pass = news_crawl
    figures = {}
    for case, groups in clusters.items():
        right = sum(kept_one(group, after_round) for group in groups)
        figures[case] = right / len(groups)
        print(
            f"{case}: {right} of {len(groups)} clusters keep exactly one copy ({figures[case]:.1%})"
        )
    assert figures["exact"] == 1.0
    assert figures["sentence"] >= 0.95 and figures["chrome"] >= 0.95


def test_distinct_pages_are_not_marked(news_crawl):
    corpus, clusters, after_round, _ = news_crawl
    copies = {u for g in clusters.values() for c in g for u in c[1:]}
    distinct = [u for u in corpus.distinct_urls() if u not in copies]
    false = [u for u in distinct if after_round[u][0] == st.DUPLICATE]
    share = len(false) / len(distinct)
    print(f"false duplicates: {len(false)} of {len(distinct)} distinct pages ({share:.3%})")
    assert share <= 0.001, false[:5]


def test_the_full_pass_agrees_with_the_rounds(news_crawl):
    _, _, after_round, after_pass = news_crawl
    changed = [u for u in after_round if after_round[u] != after_pass[u]]
    assert not changed, [(u, after_round[u], after_pass[u]) for u in changed[:5]]
