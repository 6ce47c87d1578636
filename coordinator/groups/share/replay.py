"""Replay of share group records into ``CoordinatorShard.groups``: one function per record type,
named in ``coordinator.groups.replay``'s table. A record may come before its group's metadata
record (compaction keeps the latest of each key, in log order), so every replayer but the
tombstones creates the group it needs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coordinator.groups.common.members import replayed_group
from storage.records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupPartitionMetadataKey,
    ShareGroupPartitionMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
)

from .model import ShareGroup, ShareGroupMember, SubscribedTopic
from .records import assignment_of


def _group(shard: Any, group_id: str, create: bool = True) -> ShareGroup | None:
    return replayed_group(shard, group_id, ShareGroup, create)


def group_metadata(shard: Any, offset: int, key: ShareGroupMetadataKey,
                   value: ShareGroupMetadataValue | None) -> None:
    if value is None:
        if isinstance(shard.groups.get(key.group_id), ShareGroup):
            del shard.groups[key.group_id]
        return
    group = _group(shard, key.group_id)
    assert group is not None
    group.group_epoch = value.epoch
    group.metadata_hash = value.metadata_hash


def partition_metadata(shard: Any, offset: int, key: ShareGroupPartitionMetadataKey,
                       value: ShareGroupPartitionMetadataValue | None) -> None:
    group = _group(shard, key.group_id, create=value is not None)
    if group is None:
        return
    group.subscription_metadata = {} if value is None else {
        t.topic_name: SubscribedTopic(t.topic_id, t.topic_name, t.num_partitions)
        for t in value.topics}


def member_metadata(shard: Any, offset: int, key: ShareGroupMemberMetadataKey,
                    value: ShareGroupMemberMetadataValue | None) -> None:
    group = _group(shard, key.group_id, create=value is not None)
    if group is None:
        return
    if value is None:
        group.members.pop(key.member_id, None)
        return
    old = group.members.get(key.member_id) or ShareGroupMember(key.member_id)
    group.members[key.member_id] = replace(
        old, rack_id=value.rack_id, client_id=value.client_id, client_host=value.client_host,
        subscribed_topic_names=tuple(value.subscribed_topic_names))


def target_metadata(shard: Any, offset: int, key: ShareGroupTargetAssignmentMetadataKey,
                    value: ShareGroupTargetAssignmentMetadataValue | None) -> None:
    group = _group(shard, key.group_id, create=value is not None)
    if group is None:
        return
    group.assignment_epoch = 0 if value is None else value.assignment_epoch
    group.assignment_timestamp = 0 if value is None else value.timestamp


def target_member(shard: Any, offset: int, key: ShareGroupTargetAssignmentMemberKey,
                  value: ShareGroupTargetAssignmentMemberValue | None) -> None:
    group = _group(shard, key.group_id, create=value is not None)
    if group is None:
        return
    if value is None:
        group.target.pop(key.member_id, None)
    else:
        group.target[key.member_id] = assignment_of(value.topic_partitions)


def current_assignment(shard: Any, offset: int, key: ShareGroupCurrentMemberAssignmentKey,
                       value: ShareGroupCurrentMemberAssignmentValue | None) -> None:
    group = _group(shard, key.group_id, create=value is not None)
    if group is None or value is None:
        return  # the member itself goes with its metadata tombstone
    old = group.members.get(key.member_id) or ShareGroupMember(key.member_id)
    group.members[key.member_id] = replace(
        old, member_epoch=value.member_epoch,
        previous_member_epoch=value.previous_member_epoch,
        assigned_partitions=assignment_of(value.assigned_partitions))


def state_partition_metadata(shard: Any, offset: int, key: ShareGroupStatePartitionMetadataKey,
                             value: ShareGroupStatePartitionMetadataValue | None) -> None:
    group = _group(shard, key.group_id, create=value is not None)
    if group is None:
        return
    group.initialized = {} if value is None else {
        t.topic_id: (t.topic_name, frozenset(t.partitions)) for t in value.initialized_topics}
