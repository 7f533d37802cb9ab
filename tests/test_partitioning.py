"""Fetch partitions balanced by expected fetch time (crawldb/partitioning.py)."""

import random
import zlib

import pytest

from crawldb.partitioning import (
    assign_partitions,
    host_cost,
    partition_loads,
    round_cap,
    skew,
)


def test_a_big_host_gets_a_partition_and_small_ones_share_the_rest():
    costs = {"big.test": host_cost(1000, 1.0)} | {
        f"h{i}.test": host_cost(10, 1.0) for i in range(100)
    }
    placed = assign_partitions(costs, 4)
    loads = partition_loads(costs, placed, 4)
    big = placed["big.test"]
    assert all(placed[h] != big for h in costs if h != "big.test")  # alone on its partition
    assert sorted(loads) == [330.0, 330.0, 340.0, 1000.0]
    assert skew(loads) == pytest.approx(1000 / 335, abs=1e-3)


def test_longest_processing_time_beats_hashing_on_skewed_hosts():
    rng = random.Random(1)
    costs = {f"h{i}.test": host_cost(int(rng.paretovariate(1.2) * 10), 1.0) for i in range(400)}
    balanced = skew(partition_loads(costs, assign_partitions(costs, 8), 8))
    hashed = {host: zlib.crc32(host.encode()) % 8 for host in costs}  # as by hashing
    assert balanced < skew(partition_loads(costs, hashed, 8))
    # LPT: the slowest partition is within 4/3 of the ideal (or is one host alone)
    loads = partition_loads(costs, assign_partitions(costs, 8), 8)
    assert max(loads) <= max(sum(costs.values()) / 8 * 4 / 3, max(costs.values()))


def test_delay_weighs_more_than_count_and_assignment_is_deterministic():
    assert host_cost(10, 5.0) > host_cost(40, 1.0)
    assert host_cost(10, 0.0) == pytest.approx(0.1)  # no delay: a small cost per URL
    costs = {"a.test": 5.0, "b.test": 5.0, "c.test": 1.0}
    assert assign_partitions(costs, 2) == assign_partitions(dict(reversed(costs.items())), 2)
    with pytest.raises(ValueError):
        assign_partitions(costs, 0)


def test_skew_and_round_cap():
    assert skew([10.0, 10.0, 10.0]) == 1.0
    assert skew([30.0, 10.0, 10.0, 0.0]) == 3.0  # idle partitions left out
    assert skew([]) == 1.0
    assert round_cap(1.0, 10) == 600 and round_cap(2.0, 10) == 300
    assert round_cap(1.0, -1) is None and round_cap(0.0, 10) is None
