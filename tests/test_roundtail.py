"""The round's tail (lib.fetching.roundtail) and generate's plan by the same budget (no Spark)."""

from crawldb.partitioning import host_pace, round_shares
from lib.config import load_config
from lib.fetching.roundtail import HostOutlook, plan_tail, round_budget

CONF = load_config(overrides=["fetcher.round.tail.slack=10"])  # 1.5 x the 95% point + 10 s


def test_a_host_that_would_hold_the_round_is_deferred():
    # 1,000 requests made in 20 s; 10 left on fast hosts, 40 on a host paused 30 s after
    # one slow answer, then 0.5 s a request.
    starts = [i * 0.02 for i in range(1000)]
    fast = [HostOutlook(f"fast{i}", 1, 0.2, 0.5) for i in range(10)]
    slow = HostOutlook("slow", 40, 30.0, 0.5)
    plan = plan_tail([*fast, slow], starts, 20.0, CONF)
    # 95% of 1,050 (998) have started, the 998th at 19.94 s: budget 39.91 s, 19.91 s from
    # now: the slow host's next start (30 s) is past it.
    assert plan.keep == {"slow": 0}
    assert plan.holding == ["slow"]
    assert abs(plan.eta - 19.91) < 1e-9  # the round ends at its budget
    # The same host with its pause over (next start now, 0.5 s a request) keeps 41 of 40.
    assert plan_tail([*fast, HostOutlook("slow", 40, 0.0, 0.5)], starts, 20.0, CONF).keep == {}


def test_once_95_percent_started_the_budget_is_fixed_and_the_tail_cut_to_it():
    starts = [i * 0.05 for i in range(600)]  # 600 requests in 30 s
    late = HostOutlook("late", 20, 5.0, 3.0)  # then 20 more, 3 s apart, from 5 s on
    plan = plan_tail([late], starts, 30.0, CONF)
    # 95% of 620 = 589 started by 29.4 s: budget 54.1 s, 24.1 s from now: 5 + 6 x 3 fits.
    assert plan.keep == {"late": 7}
    assert round_budget(29.4, CONF) == 1.5 * 29.4 + 10


def test_a_round_bound_by_throughput_is_not_cut():
    # 2,000 hosts of 30 URLs at no delay; 1,000 requests in 10 s: the rest takes 590 s by
    # the rate, whatever the hosts' own paces say.
    starts = [i * 0.01 for i in range(1000)]
    hosts = [HostOutlook(f"h{i}", 30 if i else 29, 0.0, 0.01) for i in range(2000)]
    plan = plan_tail(hosts, starts, 10.0, CONF)
    assert plan.keep == {}
    assert plan.eta >= 590.0


def test_generate_spreads_a_slow_host_over_rounds():
    fast = {f"h{i}": (15, 0.5) for i in range(60)}
    crawl_delay = host_pace(3.0, 0.002, CONF)
    shares = round_shares({**fast, "slow": (60, crawl_delay)}, CONF)
    assert set(shares) == {"slow"} and 5 <= shares["slow"] < 60
    # the same Crawl-delay everywhere: the hosts finish together already, no one is cut
    assert round_shares({f"h{i}": (60, crawl_delay) for i in range(60)}, CONF) == {}


def test_the_pace_of_a_host_slow_on_every_answer():
    assert host_pace(0.5, 0.002, CONF) == 0.502
    assert host_pace(0.5, 0.15, CONF) == 1.5 + 0.15  # slow on every answer: 10 x 0.15 s


def test_the_budget_left_is_told_when_only_requests_on_their_way_remain():
    starts = [i * 0.1 for i in range(100)]  # all made, the 95th at 9.4 s: budget 24.1 s
    assert plan_tail([], starts, 20.0, CONF).left == round_budget(9.4, CONF) - 20.0
    assert plan_tail([], starts, 30.0, CONF).left < 0  # spent: long requests are cut
