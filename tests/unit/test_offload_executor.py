"""The background executor (a process pool) and its plain measurements."""

from __future__ import annotations

import asyncio
import operator
import os
import uuid

from coordinator.background.executor import WORKER_NICENESS, BackgroundExecutor, scheduling_of
from coordinator.background.stats import BackgroundStats, BusyTracker, SlidingWindow
from coordinator.groups.common.assignor_job import build_job, run_job


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_sliding_window_percentiles_and_expiry() -> None:
    clock = Clock()
    window = SlidingWindow(window_s=10.0, clock=clock)
    for value in range(1, 1001):
        window.record(float(value))
    summary = window.summary()
    assert (summary["p50"], summary["p99"], summary["p999"], summary["max"]) == (
        500.0, 990.0, 999.0, 1000.0)
    clock.now += 11
    window.record(7.0)
    assert window.summary()["max"] == 7.0


def test_idle_ratio_counts_busy_time_of_all_workers() -> None:
    clock = Clock()
    busy = BusyTracker(workers=2, window_s=60.0, clock=clock)
    clock.now += 10
    busy.record(102.0, 107.0)  # 5 s busy out of 2 workers x 10 s
    assert abs(busy.idle_ratio() - 0.75) < 1e-9


def test_stats_snapshot_names() -> None:
    stats = BackgroundStats(workers=2)
    stats.task_sent(1000, 0.5)
    stats.task_done(1.0, 1.002, 1.012)
    snap = stats.snapshot()
    assert abs(snap["background-queue-time-ms-p50"] - 2.0) < 1e-6
    assert abs(snap["background-processing-time-ms-max"] - 10.0) < 1e-6
    assert snap["background-transfer-bytes-max"] == 1000
    assert 0.0 <= snap["background-thread-idle-ratio-avg"] <= 1.0


class _Member:
    def __init__(self, member_id: str, topics: tuple[str, ...]) -> None:
        self.member_id = member_id
        self.instance_id = None
        self.rack_id = None
        self.subscribed_topic_names = topics


class _Topic:
    def __init__(self, topic_id: uuid.UUID, partitions: int) -> None:
        self.topic_id = topic_id
        self.partitions = partitions


def test_the_job_is_compact_and_answers_only_changes() -> None:
    ids = {f"t{i}": uuid.UUID(int=i + 1) for i in range(3)}
    metadata = {name: _Topic(ids[name], 4) for name in ids}
    members = {m: _Member(m, ("t0", "t1", "t2")) for m in ("a", "b")}
    prepared = build_job("g", 5, "uniform", members, {}, metadata)
    job = prepared.job
    assert job.subscriptions == ((0, 1, 2),) and job.member_subscriptions == (0, 0)
    assert prepared.topic_ids == (ids["t0"], ids["t1"], ids["t2"])
    first = run_job(job)
    assert {m for m, _ in first.changed} == {"a", "b"}  # no target record yet: both written
    targets = {m: {ids[f"t{t}"]: p for t, p in pairs} for m, pairs in first.changed}
    again = run_job(build_job("g", 6, "uniform", members, targets, metadata).job)
    assert again.changed == ()


async def test_executor_runs_tasks_in_worker_processes_and_measures_them() -> None:
    executor = BackgroundExecutor(1)
    await executor.start()
    try:
        loop = asyncio.get_running_loop()
        ok: asyncio.Future[object] = loop.create_future()
        executor.submit(sum, [1, 2, 3], ok.set_result)
        assert await asyncio.wait_for(ok, 30) == 6
        failed: asyncio.Future[object] = loop.create_future()
        executor.submit(operator.neg, "x", failed.set_result)
        assert isinstance(await asyncio.wait_for(failed, 30), TypeError)
        snap = executor.stats.snapshot()
        assert snap["background-tasks-total"] == 2 and snap["background-task-failures-total"] == 1
        assert snap["background-transfer-bytes-max"] > 0
    finally:
        await executor.stop()
    assert not executor.running


async def test_workers_run_at_a_lower_cpu_priority_than_the_event_loop() -> None:
    """SCHED_IDLE where the OS has and allows it (Linux), else niced."""
    executor = BackgroundExecutor(1)
    await executor.start()
    try:
        got: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()
        executor.submit(scheduling_of, None, got.set_result)
        policy, niceness = await asyncio.wait_for(got, 30)
    finally:
        await executor.stop()
    # SCHED_IDLE unless the OS lacks it or refuses it (then the fallback: niced)
    assert policy == getattr(os, "SCHED_IDLE", None) or niceness >= WORKER_NICENESS
    assert scheduling_of() != (policy, niceness)  # this process is left as it is
