"""The coordinator's metrics wiring, in process: hooks from the group code, the scrape-time
snapshot, and the fallback when the event loop is too busy to answer a scrape."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from coordinator.groups import metrics_view
from coordinator.groups.common import offsets
from coordinator.groups.common.assignor_job import AssignorJob, pack_target, run_job
from coordinator.groups.expiration import expire_offsets
from coordinator.observability import collector as observability
from coordinator.observability import sensors
from coordinator.testing import ShardContext
from metrics import Measurement

RETENTION = 60_000


class FakeRuntime:
    def __init__(self, *shards: Any) -> None:
        self.event_listener = None
        self.partitions = [
            SimpleNamespace(state=SimpleNamespace(value="active"), queue=asyncio.Queue(),
                            load_time_ms=float(i + 1), shard=shard)
            for i, shard in enumerate(shards)]


@pytest.fixture
def ctx() -> ShardContext:
    return ShardContext({"offsets.retention.minutes": 1}, now_ms=1_000_000)


@pytest.fixture
def obs(ctx: ShardContext) -> Iterator[observability.Observability]:
    app = SimpleNamespace(runtime=FakeRuntime(ctx.shard), broker=None, executor=None)
    installed = observability.install(app, view_group=metrics_view.view)
    assert app.runtime.event_listener == installed.on_event
    try:
        yield installed
    finally:
        observability.uninstall(installed)


def values(measurements: list[Measurement]) -> dict[tuple[str, tuple[tuple[str, str], ...]],
                                                     float]:
    return {(m.name.name, tuple(sorted(m.name.tags.items()))): m.value for m in measurements}


def commit(ctx: ShardContext, group: str, partitions: dict[tuple[str, int], int]) -> None:
    request = offsets.OffsetCommit(group, -1, "", -1, tuple(
        offsets.PartitionCommit(t, p, o, -1, "") for (t, p), o in partitions.items()), 8)
    ctx.run(lambda shard, now: offsets.commit(shard.offsets, request, now, 4096, False))


def test_expired_offsets_are_counted_when_written(ctx: ShardContext,
                                                  obs: observability.Observability) -> None:
    commit(ctx, "simple", {("t", 0): 5, ("t", 1): 6})
    ctx.run(expire_offsets)
    assert obs.offsets_expired.count == 0  # not yet due
    ctx.advance(RETENTION)
    ctx.run(expire_offsets)
    assert obs.offsets_expired.count == 2
    assert values(obs.snapshot())[("offset-count", ())] == 0


def test_snapshot_counts_partitions_groups_and_offsets(ctx: ShardContext,
                                                       obs: observability.Observability
                                                       ) -> None:
    commit(ctx, "simple", {("t", 0): 5})
    got = values(obs.snapshot())
    assert got[("partition-count", (("state", "active"),))] == 1
    assert got[("partition-count", (("state", "loading"),))] == 0
    assert got[("partition-load-time-max", ())] == 1.0
    assert got[("offset-count", ())] == 1
    assert got[("group-count", (("protocol", "consumer"),))] == 0
    # no executor: seed 000's background metrics are there, idle
    assert got[("background-thread-idle-ratio-avg", ())] == 1.0
    assert got[("background-processing-time-ms-p99", ())] == 0.0


def test_event_listener_feeds_the_runtime_sensors(obs: observability.Observability) -> None:
    obs.on_event(0, 2.0, 5.0)
    obs.on_event(3, 4.0, 1.0)
    obs.flush_events()  # the server flushes on a timer and before every scrape's snapshot
    assert obs.event_queue_time.summary()["max"] == 4.0
    assert obs.event_processing_time.summary()["p50"] == 1.0
    assert obs.thread_idle.avg() < 1.0


def test_event_times_are_recorded_in_batches(obs: observability.Observability) -> None:
    for n in range(observability.EVENT_BATCH - 1):
        obs.on_event(0, float(n), 1.0)
    assert obs.event_queue_time.summary()["max"] == 0.0  # gathered, not yet recorded
    obs.on_event(0, 10_000.0, 1.0)  # the batch is full: recorded at once
    assert obs.event_queue_time.summary()["max"] == 10_000.0
    assert obs.event_processing_time.summary()["avg"] == 1.0
    obs.on_event(0, 3.0, 2.0)
    obs.snapshot()  # a scrape's snapshot records what was gathered first
    assert obs.event_processing_time.summary()["max"] == 2.0


def test_partitions_moved() -> None:
    before = {"a": {"t": frozenset({0, 1, 2, 3})}}
    after = {"a": {"t": frozenset({0, 1})}, "b": {"t": frozenset({2, 3}), "u": frozenset({0})}}
    assert sensors.partitions_moved(before, after) == 3
    assert sensors.partitions_moved({}, before) == 4
    assert sensors.partitions_moved(before, before) == 0


def test_offloaded_run_is_recorded(obs: observability.Observability) -> None:
    # "a" held all four partitions; the run gives two of them to the new member "b": the
    # worker counts two moved (what "b" gets that its target did not have).
    job = AssignorJob(group_id="g", group_epoch=3, assignor="uniform", topic_names=("t",),
                      partition_counts=(4,), subscriptions=((0,),), member_ids=("a", "b"),
                      instance_ids=(None, None), racks=(None, None),
                      member_subscriptions=(0, 0),
                      targets=(pack_target([(0, (0, 1, 2, 3))]), None))
    outcome = run_job(job)
    assert outcome.moved == 2 and len(outcome.changed) == 2
    sensors.record_offloaded_run(job, replace(outcome, assign_ms=7.5))
    assert obs.assignor_runs.labels("g", "uniform")._sum.get() == 7.5
    assert obs.partitions_moved.labels("g")._sum.get() == 2


def test_hooks_are_no_ops_when_not_installed() -> None:
    sensors.record_offset_commits(3)
    sensors.record_rebalance("g")
    sensors.record_assignment("g", "uniform", 1.0, 1)


def test_a_scrape_the_loop_cannot_answer_serves_the_last_snapshot(
        obs: observability.Observability) -> None:
    obs.snapshot_timeout_s = 0.05
    first = obs._measure_state()  # no loop bound: read directly
    loop = asyncio.new_event_loop()  # bound but never run: like a loop blocked by an assignor
    try:
        obs.bind_loop(loop)
        obs._loop_thread = None  # as if the loop ran on another thread
        stale = obs._measure_state()
    finally:
        loop.close()
    assert values(stale)[("stale-scrape-count", ())] == 1
    assert {k: v for k, v in values(stale).items() if k[0] != "stale-scrape-count"} == \
        {k: v for k, v in values(first).items() if k[0] != "stale-scrape-count"}


async def test_a_scrape_from_another_thread_reads_on_the_loop(
        obs: observability.Observability) -> None:
    obs.bind_loop()
    got = await asyncio.to_thread(obs._measure_state)
    assert values(got)[("stale-scrape-count", ())] == 0
    assert values(got)[("partition-count", (("state", "active"),))] == 1
