"""The benches' CPU figures come from the scheduler's per-thread count in ns (``/proc``'s
schedstat), not from clock ticks, in which a short window of a lightly loaded server read as
no CPU at all (``bench heartbeats``' open loop at 400/s offered, on a 3x slower machine)."""

from __future__ import annotations

import os
import threading
import time

from coordinator.bench.procfs import thread_cpu_ns
from coordinator.bench.workers import _cpu_between


def _burn(seconds: float) -> float:
    """Spin this thread for ``seconds`` of its own CPU time; the CPU time it took."""
    began = time.thread_time()
    while time.thread_time() - began < seconds:
        pass
    return time.thread_time() - began


def test_a_threads_cpu_is_counted_in_nanoseconds() -> None:
    me = threading.get_native_id()
    before = thread_cpu_ns(os.getpid())
    burnt = _burn(0.03)
    after = thread_cpu_ns(os.getpid())
    assert me in before and me in after
    counted = (after[me] - before[me]) / 1e9
    # the scheduler's count of a running thread may lag by what it ran since the last tick
    assert counted >= burnt - 0.01
    assert after[me] % 1_000_000 != 0  # not a count of clock ticks
    assert _cpu_between(before, after) >= counted


def test_threads_that_start_or_end_in_the_window() -> None:
    before = thread_cpu_ns(os.getpid())
    gone = threading.Thread(target=_burn, args=(0.005,))
    gone.start()
    gone.join()
    ready, finish = threading.Event(), threading.Event()

    def new() -> None:
        _burn(0.002)
        ready.set()
        finish.wait(30)

    started = threading.Thread(target=new)
    started.start()
    try:
        assert ready.wait(30)
        after = thread_cpu_ns(os.getpid())
        tid = started.native_id
        assert tid is not None and tid in after and tid not in before
        assert gone.native_id not in after  # ended: its time is not counted
        assert _cpu_between(before, after) >= after[tid] / 1e9 > 0  # started: all of it
    finally:
        finish.set()
        started.join()
