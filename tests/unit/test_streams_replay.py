"""Streams group records replayed (``coordinator/groups/streams/replay.py``): what the heartbeats
of ``StreamsGroupContext`` wrote, loaded into a fresh shard (``coordinator.groups.replay
.new_shard``), is the same group; a restarted coordinator re-arms the members' timers and goes
on without a rebalance; deleted groups stay deleted; Kafka's replay rules for records written
by other versions (unknown member state, missing task epochs, record type 18)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coordinator.groups.admin import delete_group
from coordinator.groups.replay import new_shard
from coordinator.groups.streams import records
from coordinator.groups.streams.heartbeat import rebalance_key, session_key
from coordinator.groups.streams.model import Endpoint, GroupState, MemberState, StreamsGroup
from coordinator.groups.streams.reconcile import UNKNOWN_STATE_MESSAGE
from coordinator.runtime import Result
from coordinator.testing.streams_group_context import (
    G,
    StreamsGroupContext,
    active_tasks,
    subtopology,
    topology,
)
from protocol import ErrorCode
from storage.records import (
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupPartitionMetadataKey,
    StreamsGroupPartitionMetadataValue,
    StreamsGroupTargetAssignmentMetadataKey,
    TaskIdsWithEpochs,
    decode_record,
    encode_record,
)


def persisted(group: StreamsGroup) -> dict[str, Any]:
    """What the records of a streams group hold (in-memory state left out)."""
    return {
        "group_epoch": group.group_epoch, "metadata_hash": group.metadata_hash,
        "validated_topology_epoch": group.validated_topology_epoch,
        "assignment_configs": group.assignment_configs,
        "assignment_epoch": group.assignment_epoch,
        "assignment_timestamp": group.assignment_timestamp,
        "members": dict(group.members), "target": dict(group.target),
        "topology": group.topology, "state": group.state,
    }


def replayed(ctx: StreamsGroupContext) -> Any:
    """A fresh shard with every record written in ``ctx`` loaded, through the codec."""
    shard = new_shard(0)
    for record in ctx.written:
        key, value = decode_record(*encode_record(record.key, record.value))
        shard.replay(record.offset, key, value)
    return shard


def busy_group() -> tuple[StreamsGroupContext, Any, Any, Any]:
    """Three members on two processes, standbys, endpoints, two members mid-revocation."""
    ctx = StreamsGroupContext()
    ctx.create_topic("input", 4)
    ctx.create_topic("app-store-changelog", 4)
    ctx.topology = topology(subtopology("0", ("input",), changelogs=("app-store-changelog",)))
    ctx.set_group_config(streams_num_standby_replicas=1)
    a = ctx.client("a", process_id="p1", user_endpoint=Endpoint("host-1", 9000),
                   rebalance_timeout_ms=20_000)
    b = ctx.client("b", process_id="p2", user_endpoint=Endpoint("host-2", 9000))
    a.join()
    b.join()
    ctx.converge(a, b)
    c = ctx.client("c", process_id="p1")
    c.join()  # takes 0_3 from b; a gives its standby 0_3 to b (b's process is the other one)
    a.heartbeat(hold=True)  # both are revoking
    b.heartbeat(hold=True)
    assert ctx.member("a").state is ctx.member("b").state is MemberState.UNREVOKED_TASKS
    assert ctx.member("c").state is MemberState.UNRELEASED_TASKS
    return ctx, a, b, c


def test_replaying_the_records_gives_the_same_group() -> None:
    ctx, *_ = busy_group()
    group = ctx.group()
    assert any(m.state is MemberState.UNREVOKED_TASKS for m in group.members.values())
    assert any(m.assigned.standby for m in group.members.values())
    shard = replayed(ctx)
    again = shard.groups[G]
    assert isinstance(again, StreamsGroup)
    assert persisted(again) == persisted(group)
    # the active tasks' assignment epochs survive (offset commit validation needs them)
    for member_id, member in group.members.items():
        assert again.members[member_id].assigned.epochs == member.assigned.epochs
        assert again.members[member_id].pending_revocation == member.pending_revocation


def test_replaying_after_every_heartbeat_gives_the_same_group() -> None:
    """Replay is consistent at every step, not only at the end."""
    ctx = StreamsGroupContext()
    ctx.create_topic("input", 4)
    ctx.topology = topology(subtopology("0", ("input",)))
    a, b = ctx.client("a"), ctx.client("b")
    steps = [a.join, a.heartbeat, b.join, lambda: a.heartbeat(hold=True), b.heartbeat,
             a.heartbeat, b.heartbeat, b.heartbeat, a.leave, b.heartbeat, b.heartbeat]
    for step in steps:
        step()
        assert persisted(replayed(ctx).groups[G]) == persisted(ctx.group())


def test_a_restarted_coordinator_goes_on_without_a_rebalance() -> None:
    ctx, a, b, c = busy_group()
    before = persisted(ctx.group())
    ctx.advance(5_000)
    other = ctx.restarted(advance_ms=1_000)
    group = other.group()
    assert persisted(group) == before
    assert group.configured is None and group.endpoint_epoch == 0  # in memory only
    # every member's session timeout, and the rebalance timeout of the member revoking
    for member_id in ("a", "b", "c"):
        assert other.shard.timers.is_scheduled(session_key(G, member_id))
    assert other.shard.timers.is_scheduled(rebalance_key(G, "a"))
    assert other.shard.timers.is_scheduled(rebalance_key(G, "b"))
    assert not other.shard.timers.is_scheduled(rebalance_key(G, "c"))
    # the clients go on talking to the new coordinator: no bump, the topology is configured
    # again from the metadata
    for client in (a, b, c):
        client.ctx = other
    mark = other.mark()
    response = b.heartbeat()  # acknowledges its revocation
    assert response.statuses == [] and response.member_epoch == before["group_epoch"]
    assert other.group().configured is not None and other.group().configured.is_ready
    assert [type(r.key).__name__ for r in other.records(since=mark)] == [
        "StreamsGroupCurrentMemberAssignmentKey"]  # no bump, no new target
    other.converge(a, b, c)
    assert other.group().state is GroupState.STABLE
    assert other.group().group_epoch == before["group_epoch"]


def test_timers_rearmed_on_load_fence_silent_members() -> None:
    ctx, *_ = busy_group()
    other = ctx.restarted()
    fired = other.advance(20_000)  # a never finishes revoking
    assert fired == [rebalance_key(G, "a")]
    assert "a" not in other.group().members
    fired = other.advance(25_000)
    assert set(fired) == {session_key(G, "b"), session_key(G, "c")}
    assert other.group().state is GroupState.EMPTY
    assert persisted(replayed(other).groups[G]) == persisted(other.group())


def test_a_deleted_group_stays_deleted() -> None:
    ctx, a, b, c = busy_group()
    for client in (a, b, c):
        client.leave()
    result = ctx.run(lambda shard, now: delete_group(shard, G))
    assert result is ErrorCode.none
    assert G not in ctx.shard.groups
    assert G not in replayed(ctx).groups
    assert G not in ctx.restarted().shard.groups


def test_an_unknown_member_state_fences_a_member_that_owns_tasks() -> None:
    """A state byte written by a newer coordinator loads as UNKNOWN (127); the member must
    rejoin owning nothing."""
    ctx = StreamsGroupContext()
    ctx.create_topic("input", 4)
    ctx.topology = topology(subtopology("0", ("input",)))
    ctx.heartbeat("a")
    key, value = records.current_assignment(G, ctx.member("a"))
    assert value is not None
    ctx.run(lambda shard, now: Result([(key, replace(value, state=42))]))
    assert ctx.member("a").state is MemberState.UNKNOWN
    error = ctx.error_of("a", 2, active={"0": [0, 1, 2, 3]}, standby={}, warmup={})
    assert (error.code, error.message) == (ErrorCode.fenced_member_epoch,
                                           UNKNOWN_STATE_MESSAGE)
    assert UNKNOWN_STATE_MESSAGE == ("The streams group member is in a unknown state. The "
                                     "member must abandon all its tasks and rejoin.")
    response = ctx.heartbeat("a", 0)
    assert response.member_epoch == 2
    assert active_tasks(response) == {"0": {0, 1, 2, 3}}
    assert ctx.member("a").state is MemberState.STABLE


def test_active_tasks_without_epochs_load_at_the_member_epoch() -> None:
    ctx = StreamsGroupContext()
    ctx.run(lambda shard, now: Result([(
        StreamsGroupCurrentMemberAssignmentKey(group_id=G, member_id="a"),
        StreamsGroupCurrentMemberAssignmentValue(
            member_epoch=7, previous_member_epoch=6, state=1,
            active_tasks=(TaskIdsWithEpochs(subtopology_id="0", partitions=(0, 1),
                                            assignment_epochs=()),
                          TaskIdsWithEpochs(subtopology_id="1", partitions=(2,),
                                            assignment_epochs=(5,))),
            standby_tasks=(), warmup_tasks=(), active_tasks_pending_revocation=(),
            standby_tasks_pending_revocation=(), warmup_tasks_pending_revocation=()))]))
    assert ctx.member("a").assigned.epochs == {"0": {0: 7, 1: 7}, "1": {2: 5}}


def test_the_target_metadata_tombstone_resets_the_assignment_epoch() -> None:
    ctx = StreamsGroupContext()
    ctx.create_topic("input", 1)
    ctx.topology = topology(subtopology("0", ("input",)))
    ctx.heartbeat("a")
    ctx.heartbeat("a", -1)
    ctx.run(lambda shard, now: Result([(StreamsGroupTargetAssignmentMetadataKey(group_id=G),
                                        None)]))
    assert (ctx.group().assignment_epoch, ctx.group().assignment_timestamp) == (-1, 0)


def test_the_removed_partition_metadata_record_is_ignored() -> None:
    """Record type 18 (removed in Kafka 4.1) may be read from older stores: skipped."""
    ctx = StreamsGroupContext()
    ctx.create_topic("input", 1)
    ctx.topology = topology(subtopology("0", ("input",)))
    ctx.heartbeat("a")
    before = persisted(ctx.group())
    ctx.run(lambda shard, now: Result([(StreamsGroupPartitionMetadataKey(group_id=G),
                                        StreamsGroupPartitionMetadataValue())]))
    assert persisted(ctx.group()) == before
    assert persisted(replayed(ctx).groups[G]) == before
