"""The priority formula and tiers of generate (crawldb/priority.py), without Spark."""

import math

import pytest

from crawldb.priority import NEVER_FETCHED, check_weights, priority, tier, tier_quotas
from lib.config import load_config

CONF = load_config()


def test_each_term_and_the_weights():
    # importance 1, never fetched, unknown change rate (0.5), a seed (depth 0), no failure
    assert priority(1.0, NEVER_FETCHED, 0, 0, 0, 0, CONF) == pytest.approx(
        0.4 * 1 + 0.3 * 1 + 0.2 * 0.5 + 0.1 * 1
    )
    # just due (one interval since the last fetch), changed 3 times in 3 re-fetches, depth 4
    value = priority(0.25, 1.0, 3, 3, 4, 0, CONF)
    expected = 0.4 * 0.25 + 0.3 * (1 - math.exp(-1)) + 0.2 * (4 / 5) + 0.1 * (1 / 5)
    assert value == pytest.approx(expected)


def test_priority_stays_in_zero_one_and_orders_sensibly():
    best = priority(1.0, NEVER_FETCHED, 0, 0, 0, 0, CONF)
    worst = priority(0.0, 0.0, 0, 1000, 1000, 0, CONF)
    assert 0.0 <= worst < best <= 1.0
    assert priority(0.9, 1, 0, 1, 2, 0, CONF) > priority(0.1, 1, 0, 1, 2, 0, CONF)
    assert priority(0.5, 3, 0, 1, 2, 0, CONF) > priority(0.5, 0.5, 0, 1, 2, 0, CONF)
    assert priority(0.5, 1, 5, 5, 2, 0, CONF) > priority(0.5, 1, 0, 5, 2, 0, CONF)
    assert priority(0.5, 1, 0, 1, 1, 0, CONF) > priority(0.5, 1, 0, 1, 9, 0, CONF)
    # each consecutive failure halves it
    assert priority(0.5, 1, 0, 1, 1, 2, CONF) == pytest.approx(
        priority(0.5, 1, 0, 1, 1, 0, CONF) / 4
    )


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (1.0, "high"),
        (0.6, "high"),
        (0.5999, "medium"),
        (0.4, "medium"),
        (0.3999, "low"),
        (0, "low"),
    ],
)
def test_tier_boundaries(value, name):
    assert tier(value, CONF) == name


def test_tier_quotas_share_the_budget_and_pass_on_what_a_tier_cannot_use():
    shares = CONF["generate.tier.shares"]
    assert tier_quotas(100, [500, 500, 500], shares) == [60, 25, 15]
    assert tier_quotas(100, [10, 500, 500], shares) == [10, 75, 15]  # high has only 10
    assert tier_quotas(100, [500, 500, 3], shares) == [72, 25, 3]
    assert tier_quotas(100, [20, 20, 20], shares) == [20, 20, 20]  # budget larger than all
    assert tier_quotas(10, [50, 50, 50], shares) == [7, 2, 1]  # rounding goes to high
    assert sum(tier_quotas(7, [1, 50, 50], shares)) == 7
    with pytest.raises(ValueError):
        tier_quotas(10, [1, 2], shares)


def test_bad_weights_are_refused():
    check_weights(CONF)
    with pytest.raises(ValueError, match="sum to 1"):
        check_weights({**CONF, "generate.priority.weight.score": 0.9})
    with pytest.raises(ValueError, match="generate.tier.shares"):
        check_weights({**CONF, "generate.tier.shares": [0.5, 0.5]})
