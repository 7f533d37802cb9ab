from lib.politeness import DONE, PoliteScheduler, Wait


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_one_host_is_held_by_one_thread_and_waits_its_delay():
    clock = FakeClock()
    scheduler = PoliteScheduler(1.0, clock)
    for path in ("/1", "/2"):
        scheduler.add("a", path)
    assert scheduler.next_ready() == ("a", "/1")
    assert scheduler.next_ready() == Wait(None)  # a is held: nobody else may take it
    clock.now = 100.5
    scheduler.release("a", end=100.5)
    step = scheduler.next_ready()
    assert isinstance(step, Wait) and abs(step.seconds - 1.0) < 1e-9
    clock.now = 101.5
    assert scheduler.next_ready() == ("a", "/2")
    scheduler.release("a", end=101.6)
    assert scheduler.next_ready() is DONE


def test_other_hosts_go_while_one_waits():
    clock = FakeClock()
    scheduler = PoliteScheduler(5.0, clock)
    scheduler.add("a", "a1")
    scheduler.add("a", "a2")
    scheduler.add("b", "b1")
    assert scheduler.next_ready() == ("a", "a1")
    assert scheduler.next_ready() == ("b", "b1")
    scheduler.release("a", end=100.0)
    scheduler.release("b", end=100.0)
    assert isinstance(scheduler.next_ready(), Wait)


def test_crawl_delay_and_no_request_release():
    clock = FakeClock()
    scheduler = PoliteScheduler(1.0, clock)
    scheduler.add("a", "robots")
    scheduler.add("a", "denied")
    scheduler.add("a", "page")
    assert scheduler.next_ready() == ("a", "robots")
    scheduler.set_delay("a", 3.0)
    scheduler.release("a", end=100.0)
    clock.now = 103.0
    assert scheduler.next_ready() == ("a", "denied")
    scheduler.release("a", end=None)  # nothing was requested: the clock does not restart
    assert scheduler.next_ready() == ("a", "page")


def test_take_remaining_and_add_first():
    scheduler = PoliteScheduler(0.0, FakeClock())
    for item in ("x", "y", "z"):
        scheduler.add("a", item)
    assert scheduler.next_ready() == ("a", "x")
    scheduler.add_first("a", "redirect-target")
    scheduler.release("a", end=0.0)
    assert scheduler.next_ready() == ("a", "redirect-target")
    assert scheduler.take_remaining("a") == ["y", "z"]
    scheduler.release("a", end=0.0)
    assert scheduler.next_ready() is DONE
