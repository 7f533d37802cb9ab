"""Which due URLs generate takes first: a priority in [0, 1] and three tiers.

    priority = (w_score * importance + w_freshness * staleness
                + w_change * change_rate + w_depth * shallowness) * retry_factor ** retries

with the weights ``generate.priority.weight.*`` (0.4, 0.3, 0.2, 0.1, summing to 1) and
each term in [0, 1]:

- importance: the PageRank of the ``rank`` job over the highest PageRank of the crawldb;
  a URL not ranked yet uses its OPIC score over the highest score instead;
- staleness: ``1 - exp(-t / interval)``, ``t`` the time since the last fetch (1 for a URL
  never fetched): 0.63 when just due, 0.86 at twice its interval;
- change_rate: how often a re-fetch found the content changed, smoothed as
  ``(changes + 1) / (revisits + 2)`` so that an unknown page counts 0.5;
- shallowness: ``1 / (1 + depth)``, depth the link distance from a seed;
- a URL that failed transiently ``retries`` times in a row is multiplied by
  ``generate.priority.retry.factor`` per failure.

Tiers: ``high`` from ``generate.tier.high.min``, ``medium`` from ``generate.tier.medium.min``,
else ``low``. With a budget (``generate.topN``) each tier gets its share
(``generate.tier.shares``); what a tier cannot use goes to the others, best tier first.

``priority`` is written once over operators that Python floats and Spark Columns share,
so that generate computes exactly what the unit tests check.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

TIERS = ("high", "medium", "low")
NEVER_FETCHED = math.inf  # elapsed intervals of a URL never fetched: staleness 1


def priority(
    importance,
    elapsed_intervals,
    changes,
    revisits,
    depth,
    retries,
    conf: Mapping[str, Any],
    exp: Callable = math.exp,
):
    """The priority of one URL (floats) or of a DataFrame's rows (Columns, ``exp=F.exp``)."""
    staleness = 1.0 - exp(-elapsed_intervals)
    change_rate = (changes + 1.0) / (revisits + 2.0)
    shallowness = 1.0 / (depth + 1.0)
    weighted = (
        conf["generate.priority.weight.score"] * importance
        + conf["generate.priority.weight.freshness"] * staleness
        + conf["generate.priority.weight.change"] * change_rate
        + conf["generate.priority.weight.depth"] * shallowness
    )
    return weighted * conf["generate.priority.retry.factor"] ** retries


def tier(value: float, conf: Mapping[str, Any]) -> str:
    """The tier of a priority."""
    if value >= conf["generate.tier.high.min"]:
        return "high"
    return "medium" if value >= conf["generate.tier.medium.min"] else "low"


def tier_quotas(budget: int, available: Sequence[int], shares: Sequence[float]) -> list[int]:
    """URLs to take from each tier: its share of the budget, at most what it has; what a
    tier leaves unused goes to the other tiers in order (high first)."""
    if len(available) != len(shares):
        raise ValueError(f"{len(available)} tiers but {len(shares)} shares")
    quotas = [
        min(count, int(budget * share)) for count, share in zip(available, shares, strict=True)
    ]
    left = budget - sum(quotas)
    for index, count in enumerate(available):
        extra = min(left, count - quotas[index])
        quotas[index] += extra
        left -= extra
    return quotas


def check_weights(conf: Mapping[str, Any]) -> None:
    """Raise when the priority settings cannot give values in [0, 1]."""
    weights = [
        conf[f"generate.priority.weight.{term}"]
        for term in ("score", "freshness", "change", "depth")
    ]
    if min(weights) < 0 or not math.isclose(sum(weights), 1.0, abs_tol=1e-9):
        raise ValueError(f"generate.priority.weight.* must be ≥ 0 and sum to 1, not {weights}")
    shares = conf["generate.tier.shares"]
    if len(shares) != len(TIERS) or min(shares) < 0 or not math.isclose(sum(shares), 1.0):
        raise ValueError(
            f"generate.tier.shares must be {len(TIERS)} shares summing to 1, not {shares}"
        )
