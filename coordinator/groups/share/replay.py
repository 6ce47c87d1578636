"""Replay of share group records into ``CoordinatorShard.groups``: one function per record type,
named in ``coordinator.groups.replay``'s table. A record may come before its group's metadata
record (compaction keeps the latest of each key, in log order), so every replayer but the
tombstones creates the group it needs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coordinator.groups.modern import replay as modern_replay
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

from .model import ShareGroup, ShareGroupMember
from .records import assignment_of


def _group(shard: Any, key: Any, value: Any) -> ShareGroup | None:
    return modern_replay.of(shard, key, value, ShareGroup)


def group_metadata(shard: Any, offset: int, key: ShareGroupMetadataKey,
                   value: ShareGroupMetadataValue | None) -> None:
    def apply(group: ShareGroup, value: ShareGroupMetadataValue) -> None:
        group.group_epoch = value.epoch
        group.metadata_hash = value.metadata_hash

    modern_replay.group_metadata(shard, key, value, ShareGroup, apply)


def partition_metadata(shard: Any, offset: int, key: ShareGroupPartitionMetadataKey,
                       value: ShareGroupPartitionMetadataValue | None) -> None:
    modern_replay.partition_metadata(shard, key, value, ShareGroup)


def member_metadata(shard: Any, offset: int, key: ShareGroupMemberMetadataKey,
                    value: ShareGroupMemberMetadataValue | None) -> None:
    group = _group(shard, key, value)
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
    modern_replay.target_metadata(shard, key, value, ShareGroup)


def target_member(shard: Any, offset: int, key: ShareGroupTargetAssignmentMemberKey,
                  value: ShareGroupTargetAssignmentMemberValue | None) -> None:
    modern_replay.target_member(shard, key, value, ShareGroup,
                                lambda group, value: assignment_of(value.topic_partitions))


def current_assignment(shard: Any, offset: int, key: ShareGroupCurrentMemberAssignmentKey,
                       value: ShareGroupCurrentMemberAssignmentValue | None) -> None:
    group = _group(shard, key, value)
    if group is None or value is None:
        return  # the member itself goes with its metadata tombstone
    old = group.members.get(key.member_id) or ShareGroupMember(key.member_id)
    group.members[key.member_id] = replace(
        old, member_epoch=value.member_epoch,
        previous_member_epoch=value.previous_member_epoch,
        assigned_partitions=assignment_of(value.assigned_partitions))


def state_partition_metadata(shard: Any, offset: int, key: ShareGroupStatePartitionMetadataKey,
                             value: ShareGroupStatePartitionMetadataValue | None) -> None:
    group = _group(shard, key, value)
    if group is None:
        return
    group.initialized = {} if value is None else {
        t.topic_id: (t.topic_name, frozenset(t.partitions)) for t in value.initialized_topics}
