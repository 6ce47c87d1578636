"""``TimerQueue``: a timer scheduled again for later moves in place (one heap entry per timer,
not one per heartbeat), and still fires exactly at its latest deadline."""

from __future__ import annotations

from coordinator.runtime.timers import TimerQueue


def _action(name: str):  # type: ignore[no-untyped-def]
    return lambda shard, now: name


def test_a_timer_pushed_back_fires_at_its_last_deadline_only() -> None:
    timers = TimerQueue()
    for now in range(0, 10_000, 10):  # a heartbeat every 10 ms re-arms a 100 ms session
        timers.schedule("session", now + 100, _action(f"armed at {now}"))
    assert len(timers._heap) == 1  # moved in place, never pushed again
    assert timers.deadline("session") == 9_990 + 100
    assert timers.poll(10_089) == []
    due = timers.poll(10_090)
    assert [key for key, _ in due] == ["session"]
    assert due[0][1](None, 0) == "armed at 9990"  # the latest action
    assert len(timers) == 0 and timers.poll(99_999) == []


def test_an_earlier_deadline_replaces_the_timer() -> None:
    timers = TimerQueue()
    timers.schedule("t", 500, _action("late"))
    timers.schedule("t", 100, _action("early"))
    assert timers.next_deadline() == 100
    due = timers.poll(100)
    assert [(k, a(None, 0)) for k, a in due] == [("t", "early")]
    assert timers.poll(500) == []


def test_postpone_moves_only_a_scheduled_timer_and_only_later() -> None:
    timers = TimerQueue()
    assert not timers.postpone("t", 100)  # not scheduled: nothing happens
    assert not timers.is_scheduled("t")
    timers.schedule("t", 100, _action("a"))
    assert not timers.postpone("t", 50)  # earlier: left as it was
    assert timers.deadline("t") == 100
    assert timers.postpone("t", 300)
    assert timers.next_deadline() == 300  # the stale heap entry is moved on the way
    assert timers.poll(299) == []
    assert [k for k, _ in timers.poll(300)] == ["t"]


def test_timers_fire_earliest_first_whatever_was_moved() -> None:
    timers = TimerQueue()
    timers.schedule("a", 100, _action("a"))
    timers.schedule("b", 200, _action("b"))
    timers.schedule("a", 300, _action("a"))  # a moves behind b
    timers.schedule("c", 250, _action("c"))
    assert [k for k, _ in timers.poll(1_000)] == ["b", "c", "a"]


def test_a_cancelled_timer_does_not_fire_after_being_moved() -> None:
    timers = TimerQueue()
    timers.schedule("a", 100, _action("a"))
    timers.postpone("a", 200)
    assert timers.cancel("a")
    assert timers.poll(1_000) == [] and timers.next_deadline() is None
