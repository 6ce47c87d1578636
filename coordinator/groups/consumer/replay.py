"""Replay of consumer group records into ``CoordinatorShard.groups``: one replayer per record
type, named in ``coordinator.groups.replay``'s table; the shapes every modern group type shares
are replayed by ``modern.replay``, members and current assignments here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coordinator.groups.modern import replay as modern_replay
from storage.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue,
)

from .assignment_forms import assignment_of
from .model import (
    EMPTY,
    ClassicMemberInfo,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    interned_topic_names,
)


def _group_metadata(group: ConsumerGroup, value: ConsumerGroupMetadataValue) -> None:
    group.group_epoch = value.epoch


def _unassigned(group: ConsumerGroup, key: Any, value: Any) -> ConsumerGroupMember | None:
    """The member a record is for; a tombstone releases its partitions' epochs first."""
    old = group.member(key.member_id)
    if value is None and old is not None:
        group.set_partition_epochs(old, None)
    return old


def _member_metadata(group: ConsumerGroup, key: ConsumerGroupMemberMetadataKey,
                     value: ConsumerGroupMemberMetadataValue | None) -> None:
    old = _unassigned(group, key, value)
    if value is None:
        if old is not None:
            group.drop_member(key.member_id)
        return
    base = old or ConsumerGroupMember(key.member_id)
    group.put_member(replace(
        base, instance_id=value.instance_id, rack_id=value.rack_id,
        rebalance_timeout_ms=value.rebalance_timeout_ms, client_id=value.client_id,
        client_host=value.client_host,
        subscribed_topic_names=interned_topic_names(value.subscribed_topic_names),
        subscribed_topic_regex=value.subscribed_topic_regex,
        server_assignor=value.server_assignor,
        classic=None if value.classic_member_metadata is None else ClassicMemberInfo(
            value.classic_member_metadata.session_timeout_ms,
            tuple((p.name, bytes(p.metadata))
                  for p in value.classic_member_metadata.supported_protocols))))


def _current_assignment(group: ConsumerGroup, key: ConsumerGroupCurrentMemberAssignmentKey,
                        value: ConsumerGroupCurrentMemberAssignmentValue | None) -> None:
    old = _unassigned(group, key, value)
    if value is None:
        if old is not None:
            group.put_member(replace(old, member_epoch=-1, previous_member_epoch=-1,
                                     state=MemberState.STABLE, assigned_partitions={},
                                     partitions_pending_revocation={}))
        return
    try:
        state = MemberState(value.state)
    except ValueError:
        state = MemberState.UNKNOWN
    new = replace(
        old or ConsumerGroupMember(key.member_id), member_epoch=value.member_epoch,
        previous_member_epoch=value.previous_member_epoch, state=state,
        # the same objects as before when the partitions did not change (assignment_forms)
        assigned_partitions=group.assignment_forms.assignment(key.member_id,
                                                              value.assigned_partitions),
        partitions_pending_revocation=assignment_of(
            (tp.topic_id, tp.partitions) for tp in value.partitions_pending_revocation)
        if value.partitions_pending_revocation else EMPTY)
    group.set_partition_epochs(old, new)
    group.put_member(new)


group_metadata = modern_replay.group_metadata(ConsumerGroup, _group_metadata)
partition_metadata = modern_replay.partition_metadata(ConsumerGroup)
member_metadata = modern_replay.group_record(ConsumerGroup, _member_metadata)
target_metadata = modern_replay.target_metadata(ConsumerGroup)
target_member = modern_replay.target_member(
    ConsumerGroup, lambda group, key, value: group.assignment_forms.assignment(
        key.member_id, value.topic_partitions))
current_assignment = modern_replay.group_record(ConsumerGroup, _current_assignment)
