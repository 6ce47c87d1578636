"""Share group records from model values (Kafka's ``GroupCoordinatorRecordHelpers`` for share
groups): group epoch, subscription metadata, members, target assignment, current assignment,
and which share partitions have state (ShareGroupStatePartitionMetadata)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from coordinator.groups.modern import records as modern_records
from coordinator.runtime.result import Record
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
    TopicPartitions,
    TopicPartitionsInfo,
)

from .model import Assignment, ShareGroup, ShareGroupMember


def topic_partitions(assignment: Assignment) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(topic_id=topic_id, partitions=tuple(sorted(partitions)))
                 for topic_id, partitions in sorted(assignment.items(), key=lambda kv: kv[0].int)
                 if partitions)


def assignment_of(partitions: Iterable[TopicPartitions]) -> Assignment:
    return {tp.topic_id: frozenset(tp.partitions) for tp in partitions if tp.partitions}


def member_metadata(group_id: str, member: ShareGroupMember) -> Record:
    return (ShareGroupMemberMetadataKey(group_id=group_id, member_id=member.member_id),
            ShareGroupMemberMetadataValue(
                rack_id=member.rack_id, client_id=member.client_id,
                client_host=member.client_host,
                subscribed_topic_names=member.subscribed_topic_names))


def current_assignment(group_id: str, member: ShareGroupMember) -> Record:
    return (ShareGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member.member_id),
            ShareGroupCurrentMemberAssignmentValue(
                member_epoch=member.member_epoch,
                previous_member_epoch=member.previous_member_epoch, state=0,
                assigned_partitions=topic_partitions(member.assigned_partitions)))


def target_member(group_id: str, member_id: str, assignment: Assignment) -> Record:
    return (ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
            ShareGroupTargetAssignmentMemberValue(
                topic_partitions=topic_partitions(assignment)))


def target_metadata(group_id: str, epoch: int, timestamp: int) -> Record:
    return (ShareGroupTargetAssignmentMetadataKey(group_id=group_id),
            ShareGroupTargetAssignmentMetadataValue(assignment_epoch=epoch, timestamp=timestamp))


def state_partition_metadata(
        group_id: str, initialized: Mapping[uuid.UUID, tuple[str, frozenset[int]]]) -> Record:
    return (ShareGroupStatePartitionMetadataKey(group_id=group_id),
            ShareGroupStatePartitionMetadataValue(initialized_topics=tuple(
                TopicPartitionsInfo(topic_id=topic_id, topic_name=name,
                                    partitions=tuple(sorted(partitions)))
                for topic_id, (name, partitions) in sorted(initialized.items(),
                                                           key=lambda kv: kv[1][0]))))


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """A member's records, removed (Kafka's order: current, target, metadata)."""
    return [
        (ShareGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None),
        (ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None),
        (ShareGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None),
    ]


def group_tombstones(group: ShareGroup) -> list[Record]:
    """Every record of the group, removed (Kafka's ``ShareGroup.createGroupTombstoneRecords``);
    the share-partition state is removed by the caller."""
    gid = group.group_id
    out: list[Record] = []
    for member_id in group.members:
        out.append((ShareGroupCurrentMemberAssignmentKey(group_id=gid, member_id=member_id),
                    None))
    for member_id in group.target:
        out.append((ShareGroupTargetAssignmentMemberKey(group_id=gid, member_id=member_id),
                    None))
    out.append((ShareGroupTargetAssignmentMetadataKey(group_id=gid), None))
    for member_id in group.members:
        out.append((ShareGroupMemberMetadataKey(group_id=gid, member_id=member_id), None))
    out.append((ShareGroupPartitionMetadataKey(group_id=gid), None))
    out.append((ShareGroupStatePartitionMetadataKey(group_id=gid), None))
    out.append((ShareGroupMetadataKey(group_id=gid), None))
    return out


# the records every modern group type builds alike (``modern.records``)
group_epoch = modern_records.group_epoch(ShareGroupMetadataKey, ShareGroupMetadataValue)
subscription_metadata = modern_records.partition_metadata(
    ShareGroupPartitionMetadataKey, ShareGroupPartitionMetadataValue)
