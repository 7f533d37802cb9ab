"""PageRank over the crawldb's link graph, by power iteration (the ``rank`` job).

Each page starts at 1/N. One step gives every page

    rank' = (1 - d) / N + d * (sum over its inlinks of rank(source) / outdegree(source)
                               + dangling / N)

where ``d`` is ``rank.damping`` and ``dangling`` the rank of the pages without outlinks
(spread over all pages, so that ranks keep summing to 1). Steps stop when the L1 change
falls below ``rank.tolerance`` or after ``rank.max.iterations``; the result is then
within about ``tolerance * d / (1 - d)`` (L1) of the exact PageRank.

``next_rank`` is written over plain arithmetic, so the Spark job applies it to Columns
and ``pagerank`` below (a small in-memory version, for tests) to floats.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence


def next_rank(incoming, dangling, nodes: int, damping: float):
    """A page's rank after one step, from the rank flowing in over its inlinks."""
    return (1.0 - damping) / nodes + damping * (incoming + dangling / nodes)


def pagerank(
    nodes: Sequence[str],
    edges: Iterable[tuple[str, str]],
    damping: float,
    tolerance: float,
    max_iterations: int,
) -> tuple[dict[str, float], int]:
    """PageRank of a small graph in memory, and the steps taken."""
    links = sorted(set(edges))
    degree: dict[str, int] = defaultdict(int)
    for source, _ in links:
        degree[source] += 1
    count = len(nodes)
    ranks = dict.fromkeys(nodes, 1.0 / count)
    for step in range(1, max_iterations + 1):
        incoming: dict[str, float] = defaultdict(float)
        for source, target in links:
            incoming[target] += ranks[source] / degree[source]
        dangling = sum(rank for node, rank in ranks.items() if not degree[node])
        new = {node: next_rank(incoming[node], dangling, count, damping) for node in nodes}
        change = sum(abs(new[node] - ranks[node]) for node in nodes)
        ranks = new
        if change < tolerance:
            return ranks, step
    return ranks, max_iterations
