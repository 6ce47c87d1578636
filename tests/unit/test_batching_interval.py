"""Assignment batching (seed 000) in virtual time: the interval counts from the finish time of
the last computation (the target metadata record's Timestamp), new groups start at epoch 2 with
epoch 1 as the empty assignment, and the per-group interval (-1 = the broker's) wins."""

from __future__ import annotations

from coordinator.apis.group_resource_configs import SET, altered
from coordinator.config import ServerConfig
from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.metadata.config_resources import GROUP
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from storage.records import ConsumerGroupTargetAssignmentMetadataValue

BROKER = ServerConfig.from_sources({})


def context(interval_ms: int, *, offload: bool = False) -> ConsumerGroupContext:
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=interval_ms,
                                                     assignor_offload=offload), offload=offload)
    ctx.create_topic("t", 8)
    return ctx


def set_group_config(ctx: ConsumerGroupContext, group_id: str, **configs: str) -> None:
    ops = [(name.replace("_", "."), SET, value) for name, value in configs.items()]
    old = ctx.group_configs.configs(GROUP, group_id)
    ctx.set_group_configs(group_id, altered(old, ops, BROKER))


def target_records(ctx: ConsumerGroupContext) -> list[ConsumerGroupTargetAssignmentMetadataValue]:
    return [v for _, v in ctx.written if isinstance(v, ConsumerGroupTargetAssignmentMetadataValue)]


def test_new_group_starts_at_epoch_2_with_its_first_target_computed_inline() -> None:
    ctx = context(1000)
    first = ctx.heartbeat(member_id="a", topics=["t"])
    assert (first.member_epoch, ctx.named(first.assignment)) == (2, {"t": set(range(8))})
    assert [r.assignment_epoch for r in target_records(ctx)] == [2]


def test_without_a_target_yet_the_first_member_gets_epoch_1_and_nothing() -> None:
    ctx = context(1000, offload=True)
    response = ctx.heartbeat(member_id="a", topics=["t"])
    assert (response.member_epoch, ctx.named(response.assignment)) == (1, {})
    assert (ctx.group().group_epoch, ctx.group().assignment_epoch) == (2, 0)
    assert ctx.pending_runs() == 0  # the first run waits for more members (issue 24)...
    ctx.advance(ctx.env.settings.first_target_window_ms)
    assert ctx.finish_runs() == 1  # ...then starts from the assign timer
    assert [r.assignment_epoch for r in target_records(ctx)] == [2]
    again = ctx.heartbeat(member_id="a", member_epoch=1)
    assert (again.member_epoch, ctx.named(again.assignment)) == (2, {"t": set(range(8))})


def test_interval_is_honoured_from_the_finish_timestamp() -> None:
    ctx = context(1000)
    ctx.heartbeat(member_id="a", topics=["t"])
    finished = ctx.group().assignment_timestamp
    assert finished == ctx.now
    ctx.advance(400)
    ctx.heartbeat(member_id="b", topics=["t"])  # group epoch 3, not due before finished + 1000
    assert (ctx.group().group_epoch, ctx.group().assignment_epoch) == (3, 2)
    ctx.advance(599)
    ctx.heartbeat(member_id="a", member_epoch=2)
    assert ctx.group().assignment_epoch == 2
    ctx.advance(1)  # exactly the interval after the finish: any member's heartbeat runs it
    ctx.heartbeat(member_id="a", member_epoch=2)
    assert ctx.group().assignment_epoch == 3
    assert [r.timestamp for r in target_records(ctx)] == [finished, finished + 1000]


def test_finish_time_of_an_offloaded_run_is_when_its_result_is_installed() -> None:
    ctx = context(1000, offload=True)
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.advance(300)  # the run takes 300 ms
    ctx.finish_runs()
    assert ctx.group().assignment_timestamp == ctx.now
    installed = ctx.now
    ctx.heartbeat(member_id="b", topics=["t"])
    ctx.advance(999)
    ctx.heartbeat(member_id="a", member_epoch=1)
    assert ctx.pending_runs() == 0  # 999 ms after the finish: not yet
    ctx.advance(1)
    ctx.heartbeat(member_id="a", member_epoch=2)
    assert ctx.pending_runs() == 1
    assert ctx.now - installed == 1000


def test_interval_0_computes_on_every_epoch_bump() -> None:
    ctx = context(0)
    for i, member in enumerate("abcd"):
        ctx.heartbeat(member_id=member, topics=["t"])
        assert ctx.group().assignment_epoch == 2 + i
    assert len(target_records(ctx)) == 4


def test_old_store_without_timestamp_computes_at_once() -> None:
    ctx = context(10_000)
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.group().assignment_timestamp = 0  # as replayed from a record without the tagged field
    ctx.heartbeat(member_id="b", topics=["t"])
    assert ctx.group().assignment_epoch == 3


def test_group_interval_overrides_the_broker_and_minus_1_means_the_broker() -> None:
    ctx = context(0)
    set_group_config(ctx, "g", consumer_assignment_interval_ms="5000")
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.advance(4999)
    ctx.heartbeat(member_id="b", topics=["t"])
    assert ctx.group().assignment_epoch == 2  # the group's 5000 ms, not the broker's 0
    set_group_config(ctx, "g", consumer_assignment_interval_ms="-1")
    ctx.heartbeat(member_id="b", member_epoch=2)
    assert ctx.group().assignment_epoch == 3  # -1: the broker's 0 again
    other = ctx.heartbeat(group_id="other", member_id="x", topics=["t"])
    assert other.member_epoch == 2  # other groups never saw the override


def test_group_heartbeat_and_session_overrides_apply() -> None:
    ctx = context(0)
    set_group_config(ctx, "g", consumer_heartbeat_interval_ms="6000",
                     consumer_session_timeout_ms="50000")
    response = ctx.heartbeat(member_id="a", topics=["t"])
    assert response.heartbeat_interval_ms == 6000
    ctx.advance(45001)
    assert ctx.group().member("a") is not None  # the broker's 45 s no longer applies
    ctx.advance(5000)
    assert ctx.group().member("a") is None
