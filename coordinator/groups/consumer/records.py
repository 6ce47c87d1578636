"""Consumer group records from model values (Kafka's GroupCoordinatorRecordHelpers)."""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.groups.modern import records as modern_records
from coordinator.runtime.result import Record
from storage.records import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupHeldPartitionsKey,
    ConsumerGroupHeldPartitionsValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)

from . import client_selection
from .assignment_forms import AssignmentForms, topic_partitions
from .model import Assignment, ConsumerGroup, ConsumerGroupMember


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


def current_assignment(group_id: str, member: ConsumerGroupMember,
                       forms: AssignmentForms | None = None) -> Record:
    """The member's current assignment record; with the group's ``forms`` an assignment that
    did not change since the member's last record reuses that record's partition tuple."""
    assigned = (topic_partitions(member.assigned_partitions) if forms is None
                else forms.form(member.member_id, member.assigned_partitions))
    return (ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member.member_id),
            ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=member.member_epoch,
                previous_member_epoch=member.previous_member_epoch, state=int(member.state),
                assigned_partitions=assigned,
                partitions_pending_revocation=topic_partitions(
                    member.partitions_pending_revocation)))


def current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return (ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None)


def target_member(group_id: str, member_id: str, assignment: Assignment,
                  forms: AssignmentForms | None = None) -> Record:
    """A member's target assignment record; with the group's ``forms`` its replay gives back
    ``assignment`` itself (and a current assignment record of the same object shares its
    partition tuple)."""
    form = topic_partitions(assignment) if forms is None else forms.form(member_id, assignment)
    return (ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
            ConsumerGroupTargetAssignmentMemberValue(topic_partitions=form))


def target_member_tombstone(group_id: str, member_id: str) -> Record:
    return (ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None)


def target_metadata(group_id: str, epoch: int, timestamp: int) -> Record:
    return (ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id),
            ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                       timestamp=timestamp))


def held_partitions(group_id: str, member_id: str, assignment: Assignment, deadline_ms: int,
                    reason: str) -> Record:
    """Deferred resolution's hold of ``member_id``'s partitions (ours, type 1020)."""
    return (ConsumerGroupHeldPartitionsKey(group_id=group_id, member_id=member_id),
            ConsumerGroupHeldPartitionsValue(topic_partitions=topic_partitions(assignment),
                                             deadline_ms=deadline_ms, reason=reason))


def held_partitions_tombstone(group_id: str, member_id: str) -> Record:
    return (ConsumerGroupHeldPartitionsKey(group_id=group_id, member_id=member_id), None)


def regex_record(group_id: str, regex: str, topics: Iterable[str], version: int,
           timestamp: int) -> Record:
    return (ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex),
            ConsumerGroupRegularExpressionValue(topics=tuple(sorted(topics)), version=version,
                                                timestamp=timestamp))


def regex_tombstone(group_id: str, regex: str) -> Record:
    return (ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex), None)


def group_tombstones(group: ConsumerGroup) -> list[Record]:
    """Records deleting this (empty) group, for DeleteGroups (``groups.admin``) and its
    conversion to a classic group."""
    gid = group.group_id
    out: list[Record] = []
    for member_id in group.members:
        out += [current_assignment_tombstone(gid, member_id),
                target_member_tombstone(gid, member_id),
                member_metadata_tombstone(gid, member_id)]
    out += [regex_tombstone(gid, regex) for regex in group.resolved_regexes]
    out += client_selection.group_tombstones(group)
    out += [held_partitions_tombstone(gid, member_id) for member_id in group.held]
    out += [(target_metadata(gid, 0, 0)[0], None),
            (subscription_metadata(gid, ())[0], None),
            (group_epoch(gid, 0)[0], None)]
    return out


# the records every modern group type builds alike (``modern.records``)
group_epoch = modern_records.group_epoch(ConsumerGroupMetadataKey, ConsumerGroupMetadataValue)
subscription_metadata = modern_records.partition_metadata(
    ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue)
