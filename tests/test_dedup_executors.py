"""The duplicate rules run by Spark's tasks (engine.executors.duplicates.spark_verdicts),
narrowed to a round's keys or not, and in the driver over the pages a round meets
(met_pages), give the verdicts the driver gives over the whole table: random pages of
every kind of meeting, canonicals among them."""

import random

import pytest
from test_duplicate_rules import CONF, EARLIER, ROUND, page, random_pages, table

from crawldb.duplicate_keys import PAGE_DDL
from crawldb.duplicates import round_verdicts
from engine.executors.duplicates import met_pages, spark_verdicts
from lib import vocabulary as st

pytestmark = pytest.mark.spark


def with_canonicals(pages: dict, seed: int) -> dict:
    """Some pages name another page (a chain now and then), or a URL not crawled; some
    are marked duplicates already."""
    draw = random.Random(seed)
    urls = list(pages)
    for url in draw.sample(urls, len(urls) // 6):
        pages[url]["canonical"] = draw.choice([*draw.sample(urls, 3), "http://elsewhere/x"])
    for url in draw.sample(urls, len(urls) // 5):
        pages[url].update(status=st.DUPLICATE, duplicate_of=draw.choice(urls))
    for number in range(60):  # earlier pages that meet nothing: left out when narrowed
        url = f"http://far/{number}"
        sketch = bytes(draw.getrandbits(8) for _ in range(64))
        simhash = draw.getrandbits(64) - 2**63
        pages[url] = page(url, f"far{number}", simhash, sketch, segment=EARLIER)
    return pages


@pytest.mark.parametrize("seed", [11, 12])
def test_sparks_tasks_give_the_drivers_verdicts(spark, seed):
    pages = table(with_canonicals(random_pages(seed, 300), seed).values())
    frame = spark.createDataFrame(pages, schema=PAGE_DDL)
    expected = round_verdicts(pages, CONF).sort_by("url").to_pylist()
    kinds = {row["kind"] for row in expected}
    assert {"canonical", "exact", "near", "restored"} <= kinds
    assert sum(1 for page in pages.to_pylist() if page["segment"] != ROUND) > 50
    for narrow in (True, False):
        found = spark_verdicts(frame, CONF, narrow).sort_by("url").to_pylist()
        assert found == expected, narrow
    # The pages the round meets, collected: the rules over them give the same verdicts.
    met = met_pages(frame, CONF)
    assert met.num_rows <= pages.num_rows - 55
    assert round_verdicts(met, CONF).sort_by("url").to_pylist() == expected
