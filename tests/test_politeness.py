from lib.fetching.politeness import DONE, PoliteScheduler, Wait


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_one_host_is_held_by_one_thread_and_waits_its_pause():
    clock = FakeClock()
    scheduler = PoliteScheduler(clock)
    for path in ("/1", "/2"):
        scheduler.add("a", path)
    assert scheduler.next_ready() == ("a", "/1")
    assert scheduler.next_ready() == Wait(None)  # a is held: nobody else may take it
    clock.now = 100.5
    scheduler.release("a", next_start=101.5)
    step = scheduler.next_ready()
    assert isinstance(step, Wait) and abs(step.seconds - 1.0) < 1e-9
    clock.now = 101.5
    assert scheduler.next_ready() == ("a", "/2")
    scheduler.release("a", next_start=102.6)
    assert scheduler.next_ready() is DONE


def test_other_hosts_go_while_one_waits():
    clock = FakeClock()
    scheduler = PoliteScheduler(clock)
    scheduler.add("a", "a1")
    scheduler.add("a", "a2")
    scheduler.add("b", "b1")
    assert scheduler.next_ready() == ("a", "a1")
    assert scheduler.next_ready() == ("b", "b1")
    scheduler.release("a", next_start=105.0)
    scheduler.release("b", next_start=105.0)
    assert isinstance(scheduler.next_ready(), Wait)


def test_release_without_request_keeps_the_previous_time():
    clock = FakeClock()
    scheduler = PoliteScheduler(clock)
    for item in ("robots", "denied", "page"):
        scheduler.add("a", item)
    assert scheduler.next_ready() == ("a", "robots")
    scheduler.release("a", next_start=103.0)
    clock.now = 103.0
    assert scheduler.next_ready() == ("a", "denied")
    scheduler.release("a", next_start=None)  # nothing was requested
    assert scheduler.next_ready() == ("a", "page")


def test_take_remaining_add_first_and_not_before():
    clock = FakeClock()
    scheduler = PoliteScheduler(clock)
    for item in ("x", "y", "z"):
        scheduler.add("a", item)
    scheduler.not_before("a", 102.0)
    assert scheduler.next_ready() == Wait(2.0)
    clock.now = 102.0
    assert scheduler.next_ready() == ("a", "x")
    scheduler.add_first("a", "redirect-target")
    scheduler.release("a", next_start=0.0)
    assert scheduler.next_ready() == ("a", "redirect-target")
    assert scheduler.take_remaining("a") == ["y", "z"]
    scheduler.release("a", next_start=0.0)
    assert scheduler.next_ready() is DONE


def test_take_all_returns_what_is_left_when_the_round_ends():
    clock = FakeClock()
    scheduler = PoliteScheduler(clock)
    scheduler.add("a", "a1")
    scheduler.add("b", "b1")
    scheduler.add("b", "b2")
    assert scheduler.next_ready() == ("a", "a1")
    scheduler.release("a", next_start=None)
    assert sorted(scheduler.take_all()) == [("b", "b1"), ("b", "b2")]
    assert scheduler.next_ready() is DONE


def test_many_hosts_emptied_while_waiting_are_passed_over():
    clock = FakeClock()
    scheduler = PoliteScheduler(clock)
    for k in range(5000):  # more than Python's recursion limit
        scheduler.add(f"h{k}", "x")
        scheduler.take_remaining(f"h{k}")
    scheduler.add("last", "y")
    assert scheduler.next_ready() == ("last", "y")


def test_a_host_emptied_while_it_waits_does_not_hold_the_others():
    clock = FakeClock()
    scheduler = PoliteScheduler(clock)
    scheduler.add("slow", "s1")
    scheduler.add("slow", "s2")
    host, item = scheduler.next_ready()
    scheduler.release(host, clock.now + 30.0)  # a long pause after a slow answer
    assert scheduler.take_last("slow", 5) == ["s2"]
    assert scheduler.next_ready() is DONE  # nothing left: no wait for the empty host
