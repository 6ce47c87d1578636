"""ShareGroupHeartbeat (KIP-932) as a pure handler in virtual time: joining, epochs, fencing,
leaving, session timeouts, share-state initialization, seed 000's interval and offload, topic
changes, and the admin views of a share group."""

from __future__ import annotations

import pytest

from coordinator.groups import admin
from coordinator.groups.common.offload import chunks, run_inline
from coordinator.groups.share.env import ShareGroupSettings
from coordinator.groups.share.heartbeat import (
    HeartbeatRequest,
    refresh_subscription_metadata,
    validate,
)
from coordinator.groups.share.model import GroupState
from coordinator.groups.share.offload import install
from coordinator.runtime import CoordinatorError, Result
from coordinator.testing.share_group_context import ShareGroupContext
from protocol import ErrorCode
from storage.records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupMemberMetadataKey,
    ShareGroupMetadataKey,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMetadataKey,
    ShareSnapshotKey,
)

G = "orders-workers"


@pytest.fixture
def ctx() -> ShareGroupContext:
    context = ShareGroupContext()
    context.create_topic("orders", 3)
    return context


def error_of(call: object) -> ErrorCode:
    with pytest.raises(CoordinatorError) as raised:
        assert callable(call)
        call()
    return raised.value.code


def test_a_new_member_gets_every_partition_at_once_with_the_share_state(
        ctx: ShareGroupContext) -> None:
    response = ctx.heartbeat(G, "m1", 0, ["orders"])
    assert response.member_epoch == 2  # seed 000: groups start at epoch 2
    assert response.assignment == {ctx.topic_id("orders"): frozenset({0, 1, 2})}
    assert response.heartbeat_interval_ms == 5000
    snapshots = ctx.records(ShareSnapshotKey)
    assert sorted(r.key.partition for r in snapshots) == [0, 1, 2]
    # start -1: share.auto.offset.reset applies at the first fetch
    assert {getattr(r.value, "start_offset", None) for r in snapshots} == {-1}
    state = ctx.last_value(ShareGroupStatePartitionMetadataKey)
    assert [(t.topic_name, t.partitions) for t in state.initialized_topics] == [
        ("orders", (0, 1, 2))]
    assert ctx.last_value(ShareGroupTargetAssignmentMetadataKey).assignment_epoch == 2
    group = ctx.group(G)
    assert group.state is GroupState.STABLE and group.group_epoch == 2
    assert set(ctx.shard.share_partitions[G]) == {(ctx.topic_id("orders"), p)
                                                  for p in range(3)}


def test_members_share_partitions_when_they_outnumber_them(ctx: ShareGroupContext) -> None:
    ctx.create_topic("one", 1)
    for member in ("a", "b", "c"):
        ctx.heartbeat(G, member, 0, ["one"])
    for member in ("a", "b", "c"):
        epoch = ctx.group(G).members[member].member_epoch
        response = ctx.heartbeat(G, member, epoch)
        assert response.member_epoch == ctx.group(G).assignment_epoch
    assigned = [ctx.group(G).members[m].assigned_partitions for m in ("a", "b", "c")]
    assert all(a == {ctx.topic_id("one"): frozenset({0})} for a in assigned)


def test_a_steady_heartbeat_writes_nothing_and_sends_no_assignment(
        ctx: ShareGroupContext) -> None:
    ctx.heartbeat(G, "m1", 0, ["orders"])
    mark = ctx.mark()
    response = ctx.heartbeat(G, "m1", 2)
    assert response.assignment is None and response.member_epoch == 2
    assert ctx.records(since=mark) == []


def test_epochs_are_checked_as_kafka_checks_them(ctx: ShareGroupContext) -> None:
    ctx.heartbeat(G, "m1", 0, ["orders"])
    assert error_of(lambda: ctx.heartbeat(G, "m1", 3)) is ErrorCode.fenced_member_epoch
    assert error_of(lambda: ctx.heartbeat(G, "m9", 2)) is ErrorCode.unknown_member_id
    assert error_of(lambda: ctx.heartbeat("nope", "m1", 2)) is ErrorCode.group_id_not_found
    # a rejoin (epoch 0) of a known member id is accepted and keeps the member
    assert ctx.heartbeat(G, "m1", 0, ["orders"]).member_epoch == 2


def test_the_previous_epoch_is_accepted_when_a_response_was_lost(
        ctx: ShareGroupContext) -> None:
    ctx.create_topic("more", 1)
    ctx.heartbeat(G, "m1", 0, ["orders"])
    assert ctx.heartbeat(G, "m1", 2, ["orders", "more"]).member_epoch == 3
    assert ctx.heartbeat(G, "m1", 2).member_epoch == 3  # the answer to epoch 2 was lost
    assert error_of(lambda: ctx.heartbeat(G, "m1", 1)) is ErrorCode.fenced_member_epoch


@pytest.mark.parametrize("request_, message", [
    (HeartbeatRequest(G, "", 0, subscribed_topic_names=["t"]), "MemberId can't be empty."),
    (HeartbeatRequest(G, "x" * 37, 0, subscribed_topic_names=["t"]),
     "Invalid member id in the request."),
    (HeartbeatRequest("", "m", 0, subscribed_topic_names=["t"]), "GroupId can't be empty."),
    (HeartbeatRequest(G, "m", 0, rack_id="", subscribed_topic_names=["t"]),
     "RackId can't be empty."),
    (HeartbeatRequest(G, "m", 0), "SubscribedTopicNames must be set in first request."),
    (HeartbeatRequest(G, "m", -2), "MemberEpoch is invalid."),
])
def test_malformed_requests_are_invalid_request(request_: HeartbeatRequest,
                                                message: str) -> None:
    with pytest.raises(CoordinatorError) as raised:
        validate(request_)
    assert raised.value.code is ErrorCode.invalid_request
    assert raised.value.message == message


def test_a_group_id_of_another_type_is_not_found(ctx: ShareGroupContext) -> None:
    ctx.shard.groups["classic"] = object()
    assert error_of(lambda: ctx.heartbeat("classic", "m1", 0, ["orders"])) \
        is ErrorCode.group_id_not_found


def test_the_group_size_is_bounded() -> None:
    ctx = ShareGroupContext(ShareGroupSettings(max_size=2, assignment_interval_ms=0,
                                               assignor_offload=False))
    ctx.create_topic("orders", 1)
    ctx.heartbeat(G, "a", 0, ["orders"])
    ctx.heartbeat(G, "b", 0, ["orders"])
    assert error_of(lambda: ctx.heartbeat(G, "c", 0, ["orders"])) \
        is ErrorCode.group_max_size_reached


def test_leaving_removes_the_member_and_bumps_the_epoch(ctx: ShareGroupContext) -> None:
    ctx.heartbeat(G, "a", 0, ["orders"])
    ctx.heartbeat(G, "b", 0, ["orders"])
    mark = ctx.mark()
    response = ctx.heartbeat(G, "a", -1)
    assert response.member_epoch == -1 and response.assignment is None
    gone = {type(r.key) for r in ctx.tombstones(since=mark)}
    assert gone == {ShareGroupCurrentMemberAssignmentKey, ShareGroupTargetAssignmentMemberKey,
                    ShareGroupMemberMetadataKey}
    assert ctx.group(G).group_epoch == 4
    assert set(ctx.group(G).members) == {"b"}
    assert error_of(lambda: ctx.heartbeat(G, "a", -1)) is ErrorCode.unknown_member_id


def test_a_silent_member_is_fenced_after_its_session_timeout(ctx: ShareGroupContext) -> None:
    ctx.heartbeat(G, "a", 0, ["orders"])
    ctx.advance(44_999)
    assert "a" in ctx.group(G).members
    ctx.advance(1)
    assert ctx.group(G).members == {}
    assert ctx.group(G).state is GroupState.EMPTY
    last = ctx.last_value(ShareGroupTargetAssignmentMetadataKey)
    assert last.assignment_epoch == ctx.group(G).group_epoch  # the last member's leave


def test_targets_wait_for_the_assignment_interval() -> None:
    ctx = ShareGroupContext(ShareGroupSettings(assignment_interval_ms=1000,
                                               assignor_offload=False))
    ctx.create_topic("orders", 4)
    ctx.heartbeat(G, "a", 0, ["orders"])
    first = ctx.last_value(ShareGroupTargetAssignmentMetadataKey)
    ctx.advance(200)
    response = ctx.heartbeat(G, "b", 0, ["orders"])
    assert response.member_epoch == 2 and response.assignment == {}  # the old target's epoch
    assert ctx.last_value(ShareGroupTargetAssignmentMetadataKey) is first
    ctx.advance(800)
    ctx.heartbeat(G, "b", 2)
    second = ctx.last_value(ShareGroupTargetAssignmentMetadataKey)
    assert second.assignment_epoch == 3
    assert second.timestamp - first.timestamp >= 1000


def test_an_offloaded_run_is_installed_by_its_result() -> None:
    ctx = ShareGroupContext(ShareGroupSettings(assignment_interval_ms=0, assignor_offload=True),
                            offload=True)
    ctx.create_topic("orders", 2)
    response = ctx.heartbeat(G, "a", 0, ["orders"])
    assert response.member_epoch == 1 and response.assignment == {}  # seed 000: epoch 1, empty
    assert ctx.offloader is not None and len(ctx.offloader.runs) == 1
    _, run = ctx.offloader.runs.pop()
    outcome = run_inline(run.prepared)
    for part in chunks(outcome):
        def installing(shard: object, now: int, part: tuple[int, int] = part) -> Result:
            return install(shard, now, run, outcome, part)

        ctx.run(installing)
    assert ctx.group(G).assignment_epoch == 2 and ctx.group(G).assignor_run is None
    response = ctx.heartbeat(G, "a", 1)
    assert response.member_epoch == 2
    assert response.assignment == {ctx.topic_id("orders"): frozenset({0, 1})}


def test_new_partitions_of_a_subscribed_topic_get_state_from_offset_zero(
        ctx: ShareGroupContext) -> None:
    ctx.heartbeat(G, "a", 0, ["orders"])
    ctx.add_partitions("orders", 5)
    mark = ctx.mark()
    ctx.run(lambda shard, now: refresh_subscription_metadata(shard, now, ctx.env, "orders"))
    new = ctx.records(ShareSnapshotKey, since=mark)
    assert [(r.key.partition, getattr(r.value, "start_offset", None)) for r in new] == [
        (3, 0), (4, 0)]
    assert ctx.group(G).group_epoch == 3
    response = ctx.heartbeat(G, "a", 2)
    assert response.assignment == {ctx.topic_id("orders"): frozenset(range(5))}


def test_admin_sees_a_share_group_as_kafka_shows_it(ctx: ShareGroupContext) -> None:
    ctx.heartbeat(G, "a", 0, ["orders"])
    listed = admin.list_groups(ctx.shard)
    assert [(g.group_id, g.protocol_type, g.state, g.group_type) for g in listed] == [
        (G, "share", "Stable", "share")]
    assert admin.describe(ctx.shard, G).error is ErrorCode.group_id_not_found
    assert ctx.run(lambda shard, now: admin.delete_group(shard, G)) is ErrorCode.non_empty_group
    ctx.heartbeat(G, "a", -1)
    mark = ctx.mark()
    assert ctx.run(lambda shard, now: admin.delete_group(shard, G)) is ErrorCode.none
    assert G not in ctx.shard.groups and G not in ctx.shard.share_partitions
    assert {type(r.key) for r in ctx.tombstones(since=mark)} >= {
        ShareGroupMetadataKey, ShareSnapshotKey, ShareGroupStatePartitionMetadataKey}


def test_offset_apis_on_a_share_group_are_group_id_not_found(ctx: ShareGroupContext) -> None:
    ctx.heartbeat(G, "a", 0, ["orders"])
    group = ctx.group(G)
    assert group.validate_offset_commit(object()) is ErrorCode.group_id_not_found
    assert group.validate_offset_fetch("a", 2) is ErrorCode.group_id_not_found
    error, _ = ctx.run(lambda shard, now: admin.delete_offsets(shard, G, [("orders", 0)]))
    assert error is ErrorCode.group_id_not_found


def test_a_restart_rebuilds_the_group_and_rearms_its_sessions(ctx: ShareGroupContext) -> None:
    ctx.heartbeat(G, "a", 0, ["orders"])
    again = ctx.restarted(advance_ms=1000)
    group = again.group(G)
    assert group.group_epoch == 2 and group.assignment_epoch == 2
    assert group.members["a"].assigned_partitions == {ctx.topic_id("orders"): frozenset(
        {0, 1, 2})}
    assert again.heartbeat(G, "a", 2).member_epoch == 2
    again.advance(45_000)
    assert again.group(G).members == {}


def test_a_deleted_topic_takes_its_share_state_with_it(ctx: ShareGroupContext) -> None:
    ctx.create_topic("other", 2)
    ctx.heartbeat(G, "a", 0, ["orders", "other"])
    other = ctx.topic_id("other")
    del ctx.topics.by_name["other"]
    mark = ctx.mark()
    ctx.run(lambda shard, now: refresh_subscription_metadata(shard, now, ctx.env, "other"))
    gone = [(r.key.topic_id, r.key.partition) for r in ctx.tombstones(ShareSnapshotKey,
                                                                        since=mark)]
    assert gone == [(other, 0), (other, 1)]
    assert other not in ctx.group(G).initialized
    assert all(topic_id != other for topic_id, _ in ctx.shard.share_partitions[G])
    assert ctx.group(G).group_epoch == 3  # the subscription metadata lost the topic
