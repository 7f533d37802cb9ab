"""A round's links folded per URL (crawldb.links.fold), held to a dict oracle: the least
depth, the summed score, whether a redirect led to it, the newest lastmod, the shortest
changefreq, each ignoring nulls; and folding parts then their folds (Spark's tasks fold
their batch, then the shuffled partition) gives the fold of the whole."""

import random

import pyarrow as pa

from crawldb import links
from lib.config import load_config
from lib.url.normalize import UrlNormalizer


def least(a, b):
    return b if a is None else a if b is None else min(a, b)


def greatest(a, b):
    return b if a is None else a if b is None else max(a, b)


def summed(a, b):
    return b if a is None else a if b is None else a + b


FOLD = {"depth": least, "score": summed, "redirect": greatest, "lastmod": greatest}
FOLD["changefreq"] = least


def oracle(rows):
    found = {}
    for row in rows:
        if row["url"] is None:
            continue
        if row["url"] not in found:
            found[row["url"]] = dict(row)
            continue
        seen = found[row["url"]]
        for name, how in FOLD.items():
            seen[name] = how(seen[name], row[name])
    return found


def random_links(seed):
    pick = random.Random(seed)
    return [
        {
            "url": pick.choice([None, *(f"http://a.test/{n}" for n in range(15))]),
            "depth": pick.choice([None, 0, 1, 2, 5]),
            "score": pick.choice([None, 0.0, 0.25, 1.5]),
            "redirect": pick.choice([None, False, True]),
            "lastmod": pick.choice([None, 1_000, 2_000]),
            "changefreq": pick.choice([None, 3600, 86400]),
        }
        for _ in range(pick.randint(0, 120))
    ]


def test_the_fold_is_the_oracles_and_folds_in_parts():
    for seed in range(30):
        rows = random_links(seed)
        table = pa.Table.from_pylist(rows, schema=links.link_schema())
        whole = {row["url"]: row for row in links.fold(table).to_pylist()}
        expected = oracle(rows)
        assert sorted(whole) == sorted(expected)
        for url, row in whole.items():
            for name in FOLD:
                want = expected[url][name]
                assert row[name] == want or abs(row[name] - want) < 1e-12, (seed, url, name)
        parts = [links.fold(table.slice(start, 11)) for start in range(0, table.num_rows, 11)]
        if parts:
            again = links.fold(pa.concat_tables(parts)).to_pylist()
            assert {row["url"]: row for row in again}.keys() == whole.keys()
            for row in again:
                assert row["depth"] == whole[row["url"]]["depth"]
                assert row["redirect"] == whole[row["url"]]["redirect"]


def test_keyed_links_have_a_key_and_host_unless_known():
    conf = load_config().as_dict()
    table = pa.Table.from_pylist(
        [{"url": "http://www.a.test/x/"}, {"url": "http://b.test/y"}], schema=links.link_schema()
    )
    keyed = links.keyed(table, UrlNormalizer(conf), pa.array(["http://b.test/y"]))
    assert keyed.column_names[:3] == ["url", "dedup_key", "host"]
    rows = keyed.to_pylist()
    assert rows[0]["host"] == "www.a.test" and rows[0]["dedup_key"] is not None
    assert rows[1]["host"] is None and rows[1]["dedup_key"] is None
