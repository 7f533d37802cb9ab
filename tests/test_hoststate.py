"""The adaptive delay: a host's pause follows its last answer (Heritrix's rule)."""

from lib.config import load_config
from lib.fetching.hoststate import HostState

CONF = load_config(overrides=["fetcher.server.delay=0.5", "fetcher.adaptive.delay.factor=10"])


def test_one_slow_answer_delays_the_next_request_once():
    host = HostState(CONF)
    assert host.after(0.002, 200, failed=False).pause == 0.5
    slow = host.after(20.0, 200, failed=False)  # one trickled answer
    assert slow.pause == CONF["fetcher.adaptive.delay.max"]  # capped
    # The host answers fast again: at once back at its normal pace.
    assert [host.after(0.002, 200, failed=False).pause for _ in range(3)] == [0.5] * 3


def test_a_server_slow_on_every_answer_is_paused_in_proportion():
    host = HostState(CONF)
    pauses = [host.after(0.15, 200, failed=False).pause for _ in range(4)]
    assert pauses == [1.5] * 4  # 10 x 0.15 s, on every request


def test_crawl_delay_is_the_least_pause_and_not_adaptive():
    host = HostState(CONF)
    host.crawl_delay = 3.0
    assert host.polite_delay() == 3.0
    host.after(1.0, 200, failed=False)
    assert host.delay() == 10.0 and host.polite_delay() == 3.0
    host.after(0.01, 200, failed=False)
    assert host.delay() == 3.0
