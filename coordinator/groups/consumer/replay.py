"""Replay of consumer group records into ``CoordinatorShard.groups``: one function per record
type, named in ``coordinator.groups.replay``'s table."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coordinator.groups.modern import replay as modern_replay
from storage.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
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


def _group(shard: Any, key: Any, value: Any) -> ConsumerGroup | None:
    return modern_replay.of(shard, key, value, ConsumerGroup)


def group_metadata(shard: Any, offset: int, key: ConsumerGroupMetadataKey,
                    value: ConsumerGroupMetadataValue | None) -> None:
    def apply(group: ConsumerGroup, value: ConsumerGroupMetadataValue) -> None:
        group.group_epoch = value.epoch

    modern_replay.group_metadata(shard, key, value, ConsumerGroup, apply)


def partition_metadata(shard: Any, offset: int, key: ConsumerGroupPartitionMetadataKey,
                        value: ConsumerGroupPartitionMetadataValue | None) -> None:
    modern_replay.partition_metadata(shard, key, value, ConsumerGroup)


def member_metadata(shard: Any, offset: int, key: ConsumerGroupMemberMetadataKey,
                     value: ConsumerGroupMemberMetadataValue | None) -> None:
    group = _group(shard, key, value)
    if group is None:
        return
    old = group.member(key.member_id)
    if value is None:
        if old is not None:
            group.set_partition_epochs(old, None)
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


def target_member(shard: Any, offset: int, key: ConsumerGroupTargetAssignmentMemberKey,
                   value: ConsumerGroupTargetAssignmentMemberValue | None) -> None:
    modern_replay.target_member(
        shard, key, value, ConsumerGroup,
        lambda group, value: group.assignment_forms.assignment(key.member_id,
                                                               value.topic_partitions))


def target_metadata(shard: Any, offset: int, key: ConsumerGroupTargetAssignmentMetadataKey,
                     value: ConsumerGroupTargetAssignmentMetadataValue | None) -> None:
    modern_replay.target_metadata(shard, key, value, ConsumerGroup)


def current_assignment(shard: Any, offset: int, key: ConsumerGroupCurrentMemberAssignmentKey,
                        value: ConsumerGroupCurrentMemberAssignmentValue | None) -> None:
    group = _group(shard, key, value)
    if group is None:
        return
    old = group.member(key.member_id)
    if value is None:
        if old is not None:
            group.set_partition_epochs(old, None)
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

