"""Consumer group records from model values (Kafka's GroupCoordinatorRecordHelpers)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from storage.records import (
    ClassicMemberMetadata,
    ClassicProtocol,
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
    TopicMetadata,
    TopicPartitions,
)

from ..runtime.result import Record
from .consumer_model import Assignment, ConsumerGroupMember, SubscribedTopic


def topic_partitions(assignment: Assignment) -> tuple[TopicPartitions, ...]:
    # By topic id (its integer: the order of the text form, without formatting each id).
    return tuple(TopicPartitions(topic_id=topic_id, partitions=tuple(sorted(partitions)))
                 for topic_id, partitions in sorted(assignment.items(), key=by_topic_id)
                 if partitions)


def by_topic_id(item: tuple[uuid.UUID, Any]) -> int:
    return item[0].int


def group_epoch(group_id: str, epoch: int) -> Record:
    return (ConsumerGroupMetadataKey(group_id=group_id), ConsumerGroupMetadataValue(epoch=epoch))


def subscription_metadata(group_id: str, topics: Iterable[SubscribedTopic]) -> Record:
    return (ConsumerGroupPartitionMetadataKey(group_id=group_id),
            ConsumerGroupPartitionMetadataValue(topics=tuple(
                TopicMetadata(topic_id=t.topic_id, topic_name=t.name, num_partitions=t.partitions)
                for t in sorted(topics, key=lambda t: t.name))))


def member_metadata(group_id: str, member: ConsumerGroupMember) -> Record:
    return (ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member.member_id),
            ConsumerGroupMemberMetadataValue(
                instance_id=member.instance_id, rack_id=member.rack_id,
                client_id=member.client_id, client_host=member.client_host,
                subscribed_topic_names=member.subscribed_topic_names,
                subscribed_topic_regex=member.subscribed_topic_regex,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                server_assignor=member.server_assignor,
                classic_member_metadata=None if member.classic is None else
                ClassicMemberMetadata(
                    session_timeout_ms=member.classic.session_timeout_ms,
                    supported_protocols=tuple(
                        ClassicProtocol(name=name, metadata=metadata)
                        for name, metadata in member.classic.protocols))))


def member_metadata_tombstone(group_id: str, member_id: str) -> Record:
    return (ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None)


def current_assignment(group_id: str, member: ConsumerGroupMember) -> Record:
    return (ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member.member_id),
            ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=member.member_epoch,
                previous_member_epoch=member.previous_member_epoch, state=int(member.state),
                assigned_partitions=topic_partitions(member.assigned_partitions),
                partitions_pending_revocation=topic_partitions(
                    member.partitions_pending_revocation)))


def current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return (ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None)


def target_member(group_id: str, member_id: str, assignment: Assignment) -> Record:
    return (ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
            ConsumerGroupTargetAssignmentMemberValue(
                topic_partitions=topic_partitions(assignment)))


def target_member_tombstone(group_id: str, member_id: str) -> Record:
    return (ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None)


def target_metadata(group_id: str, epoch: int, timestamp: int) -> Record:
    return (ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id),
            ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                       timestamp=timestamp))
