"""Offloaded assignor runs (seed 000) in virtual time: one run in flight per group, and the
changes missed while it ran applied before its result is installed."""

from __future__ import annotations

from coordinator.apis.group_resource_configs import SET, altered
from coordinator.config import ServerConfig
from coordinator.groups.admin import delete_group
from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from storage.records import (
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)


def context(interval_ms: int = 0, offload: bool = True) -> ConsumerGroupContext:
    # A new group's first run starts at its first heartbeat here (no window, as seed 000 has
    # it): these tests are about runs in flight; test_pacing.py has the window.
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=interval_ms,
                                                     assignor_offload=offload,
                                                     first_target_window_ms=0), offload=True)
    ctx.create_topic("t", 6)
    ctx.create_topic("u", 4)
    return ctx


def targets_written(ctx: ConsumerGroupContext) -> list[int]:
    return [v.assignment_epoch for _, v in ctx.written
            if isinstance(v, ConsumerGroupTargetAssignmentMetadataValue)]


def target_of(ctx: ConsumerGroupContext, member_id: str) -> dict[str, set[int]]:
    return ctx.named(ctx.group().target_of(member_id)) or {}


def test_a_run_in_flight_blocks_a_second_one() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    assert ctx.pending_runs() == 1 and ctx.group().assignor_run is not None
    ctx.heartbeat(member_id="b", topics=["t"])  # group epoch 3, due, but a run is in flight
    ctx.heartbeat(member_id="a", member_epoch=1)
    assert ctx.pending_runs() == 1
    ctx.finish_runs()
    assert targets_written(ctx) == [2] and ctx.group().assignor_run is None
    ctx.heartbeat(member_id="b", member_epoch=1)  # the next heartbeat starts the next run
    assert ctx.pending_runs() == 1
    ctx.finish_runs()
    assert targets_written(ctx) == [2, 3]
    assert target_of(ctx, "a") and target_of(ctx, "b")


def test_a_member_removed_during_the_run_loses_its_assignment() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.finish_runs()
    ctx.heartbeat(member_id="b", topics=["t"])  # run for {a, b} at epoch 3
    ctx.heartbeat(member_id="b", member_epoch=-1)  # b leaves while it runs
    ctx.finish_runs()
    group = ctx.group()
    assert group.assignment_epoch == 3 and "b" not in group.target
    assert "b" not in {k.member_id for k, _ in ctx.written[-3:]
                       if isinstance(k, ConsumerGroupTargetAssignmentMemberKey)}
    assert group.group_epoch == 4  # the leave bumped it: a new run is due
    ctx.heartbeat(member_id="a", member_epoch=ctx.member("a").member_epoch)
    ctx.finish_runs()
    assert target_of(ctx, "a") == {"t": set(range(6))}


def test_a_replaced_static_member_gets_the_result_under_its_new_id() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"], instance_id="i-a")
    ctx.finish_runs()
    ctx.heartbeat(member_id="a", member_epoch=1)
    ctx.heartbeat(member_id="b", topics=["t"])  # run for {a, b} at epoch 3
    ctx.heartbeat(member_id="a", member_epoch=-2, instance_id="i-a")  # a leaves for now
    ctx.heartbeat(member_id="a2", topics=["t"], instance_id="i-a")  # and comes back as a2
    ctx.finish_runs()
    group = ctx.group()
    assert group.assignment_epoch == 3
    assert "a" not in group.target and "a" not in group.members
    assert len(target_of(ctx, "a2")["t"]) == 3 and len(target_of(ctx, "b")["t"]) == 3
    assert target_of(ctx, "a2")["t"].isdisjoint(target_of(ctx, "b")["t"])


def test_a_deleted_group_discards_the_result() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="a", member_epoch=-1)
    ctx.apply(delete_group(ctx.shard, "g"))
    assert "g" not in ctx.shard.groups
    before = len(ctx.written)
    ctx.finish_runs()
    assert len(ctx.written) == before and "g" not in ctx.shard.groups


def test_a_group_recreated_during_the_run_discards_the_old_result() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="a", member_epoch=-1)
    ctx.apply(delete_group(ctx.shard, "g"))
    ctx.heartbeat(member_id="z", topics=["u"])  # a new group with the same id: its own run
    ctx.finish_runs()
    assert target_of(ctx, "z") == {"u": set(range(4))}
    assert "a" not in ctx.group().target


def test_a_subscription_change_during_the_run_installs_the_result_and_makes_a_new_run_due(
) -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="a", member_epoch=1, topics=["u"])  # epoch 3 while epoch 2 runs
    ctx.finish_runs()
    group = ctx.group()
    assert (group.group_epoch, group.assignment_epoch) == (3, 2)
    assert target_of(ctx, "a") == {"t": set(range(6))}
    response = ctx.heartbeat(member_id="a", member_epoch=1)
    # the stale target is not handed out for a topic a no longer subscribes to
    assert ctx.named(response.assignment) in (None, {})
    ctx.finish_runs()
    assert target_of(ctx, "a") == {"u": set(range(4))}


def test_offload_off_for_the_group_runs_inline() -> None:
    ctx = context()
    broker = ServerConfig.from_sources({})
    ctx.set_group_configs("g", altered({}, [("consumer.assignor.offload.enable", SET, "false")],
                                       broker))
    response = ctx.heartbeat(member_id="a", topics=["t"])
    assert response.member_epoch == 2 and ctx.pending_runs() == 0


def test_offload_on_for_the_group_overrides_the_broker() -> None:
    ctx = context(offload=False)
    broker = ServerConfig.from_sources({})
    ctx.set_group_configs("g", altered({}, [("consumer.assignor.offload.enable", SET, "true")],
                                       broker))
    response = ctx.heartbeat(member_id="a", topics=["t"])
    assert response.member_epoch == 1 and ctx.pending_runs() == 1


def test_a_failed_run_clears_the_mark_and_a_later_heartbeat_retries() -> None:
    from coordinator.groups.consumer.offload import install

    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    assert ctx.offloader is not None
    _, run = ctx.offloader.runs.pop()
    ctx.apply(install(ctx.shard, ctx.now, run, RuntimeError("worker died")))
    assert ctx.group().assignor_run is None and targets_written(ctx) == []
    ctx.heartbeat(member_id="a", member_epoch=1)
    assert ctx.pending_runs() == 1


def test_a_large_result_is_installed_in_chunks_with_the_epoch_last() -> None:
    from coordinator.groups.common.offload import CHUNK_TOPIC_ENTRIES, chunks, run_inline
    from coordinator.groups.consumer.offload import install

    ctx = context()
    ctx.create_topic("big", 200)
    for i in range(CHUNK_TOPIC_ENTRIES + 8):  # one topic each: two chunks
        ctx.heartbeat(member_id=f"m{i}", topics=["big"])
    ctx.finish_runs()  # the first member's run
    ctx.heartbeat(member_id="m0", member_epoch=ctx.member("m0").member_epoch)
    assert ctx.offloader is not None
    _, run = ctx.offloader.runs.pop()
    outcome = run_inline(run.prepared)
    parts = chunks(outcome)
    assert len(parts) == 2
    ctx.apply(install(ctx.shard, ctx.now, run, outcome, parts[0]))
    group = ctx.group()
    assert group.assignor_run == run.run_id and group.assignment_epoch == 2  # not yet
    ctx.heartbeat(member_id="m1", member_epoch=ctx.member("m1").member_epoch)
    assert ctx.pending_runs() == 0  # still in flight: no second run
    ctx.apply(install(ctx.shard, ctx.now, run, outcome, parts[1]))
    assert group.assignor_run is None and group.assignment_epoch == run.prepared.job.group_epoch
    assert sum(len(p) for t in group.target.values() for p in t.values()) == 200
