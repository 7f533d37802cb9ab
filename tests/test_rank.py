"""PageRank: the power iteration converges to the exact PageRank of a known small graph.

The exact values solve (I - d M) r = (1 - d) / N, with M the column-stochastic link
matrix (a page without outlinks links to every page), by numpy's linear solver: another
method than the power iteration under test.
"""

import numpy as np
import pytest

from crawldb.merge import new_row
from crawldb.rank import pagerank
from crawldb.schema import CRAWLDB, PARSE
from engine.runtime.layout import DataDir
from engine.tables.frames import rows_to_df
from engine.tables.store import ensure_crawldb, merge_rows
from jobs import rank
from lib import vocabulary as st
from lib.config import load_config

NODES = ["a", "b", "c", "d", "e", "f"]
# e has no outlinks (dangling); f redirects to a; d links to c and to a page outside
EDGES = [("a", "b"), ("a", "c"), ("b", "c"), ("c", "a"), ("d", "c"), ("f", "a")]
DAMPING = 0.85


def exact_pagerank(nodes, edges, damping):
    index = {node: i for i, node in enumerate(nodes)}
    count = len(nodes)
    matrix = np.zeros((count, count))
    degree = {node: sum(1 for s, _ in edges if s == node) for node in nodes}
    for source, target in edges:
        matrix[index[target], index[source]] += 1.0 / degree[source]
    for node in nodes:
        if not degree[node]:
            matrix[:, index[node]] = 1.0 / count
    ranks = np.linalg.solve(np.eye(count) - damping * matrix, np.full(count, (1 - damping) / count))
    return dict(zip(nodes, ranks.tolist(), strict=True))


def test_in_memory_power_iteration_matches_the_exact_solution():
    exact = exact_pagerank(NODES, EDGES, DAMPING)
    ranks, steps = pagerank(NODES, EDGES, DAMPING, 1e-10, 500)
    assert max(abs(ranks[n] - exact[n]) for n in NODES) < 1e-9
    assert sum(ranks.values()) == pytest.approx(1.0) and steps < 500
    assert ranks["c"] > ranks["a"] > ranks["b"] > ranks["d"]  # c has most inlinks


URL = "http://r.test/{}".format


def crawldb_rows():
    rows = []
    for node in NODES:
        row = new_row(URL(node), "r.test", 1_700_000_000_000, score=1.0, depth=0, fetch_interval=60)
        if node == "f":
            row.update(status=st.REDIR_PERM, redirect_to=URL("a"))
        rows.append(row)
    return rows


def parse_rows(links: dict[str, list[str]]):
    rows = []
    for node, targets in links.items():
        row = PARSE.empty_row()
        outlinks = [{"url": t, "anchor": "", "rel": None} for t in targets]
        row.update(url=URL(node), parse_status="success", outlinks=outlinks)
        rows.append(row)
    return rows


@pytest.mark.spark
def test_rank_job_converges_to_the_exact_pagerank_on_delta_tables(spark, tmp_path):
    data = DataDir.at(tmp_path / "data")
    ensure_crawldb(spark, data)
    merge_rows(
        spark,
        data,
        rows_to_df(spark, spark.sparkContext.parallelize(crawldb_rows()), CRAWLDB),
        "test",
    )
    # An older segment gave a different graph for a and b; the latest parse wins.
    older = {"a": [URL("e")], "b": [URL("a")]}
    latest = {
        "a": [URL("b"), URL("c"), URL("a")],  # the self-link is dropped
        "b": [URL("c")],
        "c": [URL("a"), URL("a")],  # a repeated link counts once
        "d": [URL("c"), "http://elsewhere.test/"],  # a link out of the crawldb is dropped
    }
    for name, links in (("20260101000000", older), ("20260102000000", latest)):
        segment = data.segment(name)
        frame = spark.createDataFrame(parse_rows(links), PARSE.ddl)
        frame.write.format("delta").save(segment.table("parse"))
        segment.mark("parsed", {})
    assert rank.main(["--data", str(data.root)]) == 0  # default damping and tolerance
    stored = {
        r["url"]: r["pagerank"] for r in spark.read.format("delta").load(data.crawldb).collect()
    }
    exact = exact_pagerank(NODES, EDGES, DAMPING)
    assert max(abs(stored[URL(n)] - exact[n]) for n in NODES) < 1e-6
    defaults = load_config()
    in_memory, _ = pagerank(NODES, EDGES, DAMPING, defaults["rank.tolerance"], 100)
    assert max(abs(stored[URL(n)] - in_memory[n]) for n in NODES) < 1e-12
    assert load_config()["rank.damping"] == DAMPING
