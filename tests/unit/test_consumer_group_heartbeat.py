"""The pure ConsumerGroupHeartbeat handler in virtual time: epochs, errors, batching, timers,
static members, topic changes (coordinator/groups/consumer.py)."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.groups.consumer.heartbeat import refresh_subscription_metadata
from coordinator.groups.consumer.model import ConsumerGroup, GroupState, MemberState
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from protocol import ErrorCode
from storage.records import ConsumerGroupTargetAssignmentMetadataValue

SESSION = 45000


def context(interval_ms: int = 0, **settings: Any) -> ConsumerGroupContext:
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=interval_ms,
                                                     **settings))
    ctx.create_topic("t", 6)
    return ctx


def owned(ctx: ConsumerGroupContext, member_id: str) -> dict[str, list[int]]:
    named = ctx.named(ctx.member(member_id).assigned_partitions) or {}
    return {topic: sorted(parts) for topic, parts in named.items()}


def test_first_member_gets_epoch_2_and_every_partition() -> None:
    ctx = context()
    response = ctx.heartbeat(member_id="a", topics=["t"])
    assert response.member_epoch == 2
    assert ctx.named(response.assignment) == {"t": set(range(6))}
    assert response.heartbeat_interval_ms == 5000
    group = ctx.group()
    assert (group.group_epoch, group.assignment_epoch, group.state) == (2, 2, GroupState.STABLE)


def test_second_member_triggers_revocation_before_assignment() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    b = ctx.heartbeat(member_id="b", topics=["t"])
    assert (b.member_epoch, ctx.named(b.assignment)) == (3, {})  # a still holds them
    assert ctx.member("b").state is MemberState.UNRELEASED_PARTITIONS
    assert ctx.group().state is GroupState.RECONCILING
    a = ctx.heartbeat(member_id="a", member_epoch=2)
    assert a.member_epoch == 2 and ctx.member("a").state is MemberState.UNREVOKED_PARTITIONS
    kept = owned(ctx, "a")["t"]
    a = ctx.heartbeat(member_id="a", member_epoch=2, owned={"t": kept})
    assert a.member_epoch == 3 and ctx.member("a").state is MemberState.STABLE
    b = ctx.heartbeat(member_id="b", member_epoch=3)
    assert ctx.named(b.assignment) == {"t": set(range(6)) - set(kept)}
    assert ctx.group().state is GroupState.STABLE


def test_epoch_1_is_the_empty_assignment_when_no_target_exists() -> None:
    assert ConsumerGroup("x").effective_target("m") == (1, {})


def test_assignment_interval_is_honoured_from_the_finish_timestamp() -> None:
    ctx = context(interval_ms=1000)
    ctx.heartbeat(member_id="a", topics=["t"])
    finished = ctx.group().assignment_timestamp
    assert finished == ctx.now
    ctx.advance(400)
    ctx.heartbeat(member_id="b", topics=["t"])
    group = ctx.group()
    assert (group.group_epoch, group.assignment_epoch) == (3, 2)  # batched: no new target
    assert group.state is GroupState.ASSIGNING
    ctx.advance(599)
    ctx.heartbeat(member_id="a", member_epoch=2)
    assert ctx.group().assignment_epoch == 2
    ctx.advance(1)  # exactly the interval after the last finish
    ctx.heartbeat(member_id="b", member_epoch=2)
    assert ctx.group().assignment_epoch == 3
    metadata = [v for _, v in ctx.written
                if isinstance(v, ConsumerGroupTargetAssignmentMetadataValue)]
    assert [(m.assignment_epoch, m.timestamp) for m in metadata] == [
        (2, finished), (3, finished + 1000)]


def test_epoch_bumps_only_on_subscription_membership_or_metadata_changes() -> None:
    ctx = context()
    ctx.create_topic("u", 2)
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="a", member_epoch=2, rack_id="r1")  # metadata only
    assert ctx.group().group_epoch == 2
    ctx.heartbeat(member_id="a", member_epoch=2, topics=["t", "u"])
    assert ctx.group().group_epoch == 3
    assert set(ctx.group().subscription_metadata) == {"t", "u"}


def test_topic_changes_bump_subscribed_groups() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t", "later"])
    assert ctx.group().group_epoch == 2
    ctx.apply(refresh_subscription_metadata(ctx.shard, ctx.now, ctx.env, "t"))
    assert ctx.group().group_epoch == 2  # nothing changed
    ctx.add_partitions("t", 8)
    ctx.apply(refresh_subscription_metadata(ctx.shard, ctx.now, ctx.env, "t"))
    assert ctx.group().group_epoch == 3
    response = ctx.heartbeat(member_id="a", member_epoch=2)
    assert ctx.named(response.assignment) == {"t": set(range(8))}
    ctx.create_topic("later", 1)
    ctx.apply(refresh_subscription_metadata(ctx.shard, ctx.now, ctx.env, "later"))
    assert ctx.group().group_epoch == 4
    ctx.delete_topic("later")
    ctx.apply(refresh_subscription_metadata(ctx.shard, ctx.now, ctx.env, "later"))
    assert ctx.group().group_epoch == 5
    ctx.apply(refresh_subscription_metadata(ctx.shard, ctx.now, ctx.env, "unrelated"))
    assert ctx.group().group_epoch == 5


def test_session_timeout_fences_a_silent_member_not_before() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="b", topics=["t"])
    ctx.advance(SESSION - 1)
    ctx.heartbeat(member_id="b", member_epoch=3)
    assert "a" in ctx.group().members
    ctx.advance(1)
    assert "a" not in ctx.group().members
    assert ctx.group().group_epoch == 4 and "b" in ctx.group().members
    response = ctx.heartbeat(member_id="b", member_epoch=3)
    assert ctx.named(response.assignment) == {"t": set(range(6))}


def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"], rebalance_timeout_ms=10000)
    ctx.heartbeat(member_id="b", topics=["t"])
    ctx.heartbeat(member_id="a", member_epoch=2)
    assert ctx.member("a").state is MemberState.UNREVOKED_PARTITIONS
    ctx.advance(5000)
    ctx.heartbeat(member_id="a", member_epoch=2)  # still owns them (owned unknown)
    ctx.heartbeat(member_id="b", member_epoch=3)
    ctx.advance(5000)
    assert "a" not in ctx.group().members


def test_leaving_member_epoch_minus_1_removes_it_and_frees_its_partitions() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="b", topics=["t"])
    left = ctx.heartbeat(member_id="a", member_epoch=-1)
    assert left.member_epoch == -1
    assert "a" not in ctx.group().members
    assert not ctx.shard.timers.is_scheduled(("consumer-session", "g", "a"))
    response = ctx.heartbeat(member_id="b", member_epoch=3)
    assert ctx.named(response.assignment) == {"t": set(range(6))}


def test_lost_response_retry_with_previous_epoch_and_subset_is_accepted() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="b", topics=["t"])
    ctx.heartbeat(member_id="a", member_epoch=2)
    kept = owned(ctx, "a")["t"]
    ctx.heartbeat(member_id="a", member_epoch=2, owned={"t": kept})  # now epoch 3, lost
    assert ctx.member("a").member_epoch == 3
    retry = ctx.heartbeat(member_id="a", member_epoch=2, owned={"t": kept})
    assert retry.member_epoch == 3
    assert ctx.error_of(member_id="a", member_epoch=2, owned={"t": range(6)}) \
        is ErrorCode.fenced_member_epoch  # not a subset
    assert ctx.error_of(member_id="a", member_epoch=1, owned={"t": kept}) \
        is ErrorCode.fenced_member_epoch  # not the previous epoch
    assert ctx.error_of(member_id="a", member_epoch=4) is ErrorCode.fenced_member_epoch


@pytest.mark.parametrize(("kwargs", "code"), [
    ({"member_id": ""}, ErrorCode.invalid_request),
    ({"group_id": ""}, ErrorCode.invalid_request),
    ({"instance_id": ""}, ErrorCode.invalid_request),
    ({"rack_id": ""}, ErrorCode.invalid_request),
    ({"member_epoch": -3}, ErrorCode.invalid_request),
    ({"member_epoch": -2}, ErrorCode.invalid_request),  # static leave needs an instance id
    ({"owned": {"t": [0]}}, ErrorCode.invalid_request),  # must own nothing on joining
    ({"assignor": "sticky"}, ErrorCode.unsupported_assignor),
])
def test_bad_requests(kwargs: dict, code: ErrorCode) -> None:
    ctx = context()
    base = {"member_id": "a", "topics": ["t"]}
    assert ctx.error_of(**{**base, **kwargs}) is code


def test_unknown_member_and_unknown_group() -> None:
    ctx = context()
    assert ctx.error_of(member_id="a", member_epoch=3) is ErrorCode.group_id_not_found
    ctx.heartbeat(member_id="a", topics=["t"])
    assert ctx.error_of(member_id="z", member_epoch=3) is ErrorCode.unknown_member_id
    assert ctx.error_of(member_id="z", member_epoch=-1) is ErrorCode.unknown_member_id


def test_group_id_of_another_group_type_is_not_found() -> None:
    ctx = context()
    ctx.shard.groups["classic"] = object()
    assert ctx.error_of(group_id="classic", topics=["t"]) is ErrorCode.group_id_not_found


def test_group_max_size() -> None:
    ctx = context(max_size=1)
    ctx.heartbeat(member_id="a", topics=["t"])
    assert ctx.error_of(member_id="b", topics=["t"]) is ErrorCode.group_max_size_reached
    assert ctx.heartbeat(member_id="a", member_epoch=2).member_epoch == 2


def test_static_member_leaves_temporarily_and_its_replacement_gets_its_partitions() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"], instance_id="i1")
    ctx.heartbeat(member_id="b", topics=["t"], instance_id="i2")
    ctx.heartbeat(member_id="a", member_epoch=2, instance_id="i1")
    kept = owned(ctx, "a")["t"]
    ctx.heartbeat(member_id="a", member_epoch=2, instance_id="i1", owned={"t": kept})
    assert ctx.error_of(member_id="a2", topics=["t"], instance_id="i1") \
        is ErrorCode.unreleased_instance_id
    left = ctx.heartbeat(member_id="a", member_epoch=-2, instance_id="i1")
    assert left.member_epoch == -2
    epoch = ctx.group().group_epoch
    back = ctx.heartbeat(member_id="a2", topics=["t"], instance_id="i1")
    assert ctx.group().group_epoch == epoch  # no rebalance for a returning static member
    assert "a" not in ctx.group().members
    assert sorted((back.assignment and ctx.named(back.assignment)["t"]) or []) == kept
    assert back.member_epoch == 3


def test_static_member_errors() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"], instance_id="i1")
    assert ctx.error_of(member_id="a", member_epoch=2, instance_id="nope") \
        is ErrorCode.unknown_member_id
    assert ctx.error_of(member_id="zz", member_epoch=2, instance_id="i1") \
        is ErrorCode.fenced_instance_id


def test_static_member_that_never_returns_is_removed_after_the_session_timeout() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"], instance_id="i1")
    ctx.heartbeat(member_id="a", member_epoch=-2, instance_id="i1")
    ctx.advance(SESSION)
    assert ctx.group().members == {}
    assert ctx.group().state is GroupState.EMPTY


def test_rejoin_with_epoch_zero_gets_the_full_assignment_back() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    again = ctx.heartbeat(member_id="a", topics=["t"])
    assert again.member_epoch == 2 and ctx.named(again.assignment) == {"t": set(range(6))}


def test_assignment_only_sent_when_changed_or_on_full_requests() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    assert ctx.heartbeat(member_id="a", member_epoch=2).assignment is None
    full = ctx.heartbeat(member_id="a", member_epoch=2, topics=["t"], owned={"t": range(6)},
                         rebalance_timeout_ms=1000)
    assert full.assignment is not None


def test_the_preferred_server_assignor_is_used() -> None:
    ctx = context()
    ctx.create_topic("u", 2)
    ctx.heartbeat(member_id="a", topics=["t", "u"], assignor="range")
    ctx.heartbeat(member_id="b", topics=["t", "u"], assignor="range")
    ctx.heartbeat(member_id="a", member_epoch=2)
    # range gives each member a contiguous range of every topic
    target = ctx.named(ctx.group().target["b"])
    assert target is not None and len(target["t"]) == 3 and len(target["u"]) == 1


def test_state_survives_replay_into_a_fresh_shard() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="b", topics=["t"], instance_id="s")
    ctx.heartbeat(member_id="a", member_epoch=2)
    other = ConsumerGroupContext(ctx.env.settings)
    for offset, (key, value) in enumerate(ctx.written):
        other.shard.replay(offset, key, value)
    a, b = ctx.group(), other.group()
    assert (a.group_epoch, a.assignment_epoch, a.members, a.target, a.partition_owners,
            a.static_members, a.subscription_metadata) == (
        b.group_epoch, b.assignment_epoch, b.members, b.target, b.partition_owners,
        b.static_members, b.subscription_metadata)
    other.shard.on_loaded(other.now)
    assert other.shard.timers.is_scheduled(("consumer-session", "g", "a"))
    assert other.shard.timers.is_scheduled(("consumer-rebalance", "g", "a"))


@pytest.mark.parametrize("replay_as_written", [True, False])
def test_an_epoch_bump_keeps_a_reconciled_members_partitions_as_they_are(
        replay_as_written: bool) -> None:
    """A member that holds its whole target and whose target did not change only takes the new
    epoch: its partitions stay the very objects they were (no rebuild, no re-index), its
    record reuses the partition tuple of its last one when replayed as written, and its
    partitions' epoch is its new epoch."""
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=0),
                               replay_as_written=replay_as_written)
    t, _ = ctx.create_topic("t", 6), ctx.create_topic("u", 4)
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="a", member_epoch=2)
    group, before = ctx.group(), ctx.member("a")
    if replay_as_written:
        assert before.assigned_partitions is group.target["a"]
    last_form = ctx.written[-1][1].assigned_partitions
    ctx.heartbeat(member_id="b", topics=["u"])  # a's target stays as it is
    assert group.assignment_epoch == 3
    response = ctx.heartbeat(member_id="a", member_epoch=2)
    assert (response.member_epoch, response.assignment) == (3, None)
    after = ctx.member("a")
    assert (after.member_epoch, after.previous_member_epoch, after.state) == (
        3, 2, MemberState.STABLE)
    assert ctx.named(after.assigned_partitions) == {"t": set(range(6))}
    assert group.current_partition_epoch(t, 0) == 3
    assert set(group.partition_owners.values()) == {"a", "b"}
    if replay_as_written:
        assert after.assigned_partitions is before.assigned_partitions
        assert ctx.written[-1][1].assigned_partitions is last_form
    # a load replaying the decoded records ends up in the same state
    other = ConsumerGroupContext(ctx.env.settings)
    for offset, (key, value) in enumerate(ctx.written):
        other.shard.replay(offset, key, value)
    assert (other.group().members, other.group().partition_owners) == (
        group.members, group.partition_owners)


def test_offset_commit_and_fetch_validation() -> None:
    from coordinator.groups.common.offsets import OffsetCommit
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    group = ctx.group()
    def commit(member: str, epoch: int, version: int = 9) -> ErrorCode | None:
        return group.validate_offset_commit(OffsetCommit("g", epoch, member, -1, (), version))
    assert commit("a", 2) is None
    assert commit("a", 1) is ErrorCode.stale_member_epoch
    assert commit("x", 2) is ErrorCode.unknown_member_id
    assert commit("", -1) is ErrorCode.unknown_member_id  # not empty
    assert commit("a", 2, version=8) is ErrorCode.unsupported_version
    assert group.validate_offset_fetch("a", 2) is None
    assert group.validate_offset_fetch("a", 1) is ErrorCode.stale_member_epoch
    assert group.validate_offset_fetch("x", 2) is ErrorCode.unknown_member_id
    assert group.validate_offset_fetch(None, -1) is None


def test_an_empty_group_is_deleted_by_its_tombstones() -> None:
    from coordinator.groups import admin
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["t"])
    listed = admin.list_groups(ctx.shard)
    assert [(g.group_id, g.state, g.group_type) for g in listed] == [("g", "Stable", "consumer")]
    assert admin.delete_group(ctx.shard, "g").response is ErrorCode.non_empty_group
    ctx.heartbeat(member_id="a", member_epoch=-1)
    result = admin.delete_group(ctx.shard, "g")
    assert result.response is ErrorCode.none
    ctx.apply(result)
    assert "g" not in ctx.shard.groups
