"""The lag-aware assignor (seed 001) fed by the coordinator: log end offsets from the data
plane and the group's committed offsets, inline and offloaded."""

from __future__ import annotations

import pytest

from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.groups.consumer.lag_inputs import topic_offsets
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from storage.records import OffsetCommitKey, OffsetCommitValue

LOG_END = {0: 100, 1: 50, 2: 10}  # partition -> log end offset (log start 0)


def settings(reset: str) -> ConsumerGroupSettings:
    return ConsumerGroupSettings(
        assignors=("lag", "uniform"), assignment_interval_ms=0, assignor_offload=False,
        lag_options=(("group.consumer.lag.assignor.offset.reset", reset),
                     ("group.consumer.lag.assignor.stickiness.tolerance", 0.0)))


def context(reset: str = "earliest", offload: bool = False) -> ConsumerGroupContext:
    ctx = ConsumerGroupContext(settings(reset), offload=offload)
    ctx.create_topic("t", 3)
    ctx.env.log_offsets = lambda topic, partition: (0, LOG_END[partition])
    return ctx


def commit(ctx: ConsumerGroupContext, partition: int, offset: int) -> None:
    ctx.shard.replay(10_000 + partition, OffsetCommitKey(group="g", topic="t",
                                                         partition=partition),
                     OffsetCommitValue(offset=offset, commit_timestamp=ctx.now))


def targets(ctx: ConsumerGroupContext) -> dict[str, set[int]]:
    tid = ctx.tid("t")
    return {member: set(assignment.get(tid, ())) for member, assignment
            in ctx.group().target.items()}


def test_topic_offsets_read_log_ends_and_committed_offsets() -> None:
    ctx = context()
    commit(ctx, 1, 40)
    offsets = topic_offsets(ctx.shard, "g", {"t": ctx.topics.topic("t")}, ctx.env.log_offsets)
    assert offsets["t"].log_end == (100, 50, 10)
    assert offsets["t"].committed == (-1, 40, -1)


@pytest.mark.parametrize("offload", [False, True])
def test_the_most_lagging_partition_gets_a_member_of_its_own(offload: bool) -> None:
    """The seed's worked example: lags 100, 50, 10 over two members -> C0: p0; C1: p1, p2."""
    ctx = context(offload=offload)
    ctx.heartbeat(member_id="a", topics=["t"], assignor="lag")
    ctx.heartbeat(member_id="b", topics=["t"], assignor="lag")
    if offload:
        ctx.finish_runs()
    got = sorted(targets(ctx).values(), key=len)
    assert got == [{0}, {1, 2}]


def test_committed_offsets_change_the_lags() -> None:
    """With p0 nearly caught up (lag 5), p1 (lag 50) is now the one that stands alone."""
    ctx = context()
    commit(ctx, 0, 95)
    ctx.heartbeat(member_id="a", topics=["t"], assignor="lag")
    ctx.heartbeat(member_id="b", topics=["t"], assignor="lag")
    got = sorted(targets(ctx).values(), key=len)
    assert got == [{1}, {0, 2}]
