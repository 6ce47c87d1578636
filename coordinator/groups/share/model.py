"""The share group (KIP-932) and its members, as their records say (Kafka's ``ShareGroup``).

A share group's members consume the same partitions cooperatively: a partition may be assigned
to several members, and records, not partitions, are what members hold (see ``partition``).
There is no revocation step: a member takes its target assignment at once, with the target's
epoch. Only ``share.replay`` changes these objects.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from types import MappingProxyType

from coordinator.groups.common.assignor_job import TargetIndexCache
from coordinator.groups.modern.members import ModernGroupMember
from coordinator.groups.modern.state import GroupState
from coordinator.groups.modern.subscription import SubscribedTopic
from protocol import ErrorCode

SHARE_PROTOCOL_TYPE = "share"
"""The protocol type and group type of share groups (ListGroups, DescribeGroups)."""

EMPTY_ASSIGNMENT_EPOCH = 1
"""Seed 000: epoch 1 of a new group is reserved for the empty target assignment."""
FIRST_GROUP_EPOCH = 2
"""Seed 000: new groups start at group epoch 2."""
LEAVE_GROUP_MEMBER_EPOCH = -1

Assignment = Mapping[uuid.UUID, frozenset[int]]
"""A member's partitions by topic id."""
EMPTY: Assignment = MappingProxyType({})
"""The empty assignment (one shared, read-only object)."""


class MemberState(IntEnum):
    """Kafka's ``MemberState`` byte (stored in the current assignment record); a share member
    is always stable: it takes its target at once."""

    STABLE = 0


@dataclass(frozen=True, slots=True)
class ShareGroupMember(ModernGroupMember):
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned_partitions: Assignment = field(default_factory=lambda: EMPTY)

    @property
    def instance_id(self) -> str | None:
        """Share groups have no static members (``assignor_job`` reads it)."""
        return None


@dataclass(eq=False)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    assignment_timestamp: int = 0
    """When the current target was computed (ShareGroupTargetAssignmentMetadata's
    ``Timestamp``; seed 000's interval counts from it)."""
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    subscription_metadata: dict[str, SubscribedTopic] = field(default_factory=dict)
    initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = field(default_factory=dict)
    """Share partitions whose state exists (ShareGroupStatePartitionMetadata's
    InitializedTopics): topic id -> (topic name, partitions). Only these are assigned."""
    assignor_run: int | None = None
    """The offloaded assignor run in flight (seed 000), in memory only."""
    job_targets: TargetIndexCache = field(default_factory=TargetIndexCache)
    """The members' targets as the assignor jobs pack them, kept between jobs."""

    group_type = SHARE_PROTOCOL_TYPE
    protocol_type = SHARE_PROTOCOL_TYPE

    @property
    def state(self) -> GroupState:
        return GroupState.STABLE if self.members else GroupState.EMPTY

    def member(self, member_id: str) -> ShareGroupMember | None:
        return self.members.get(member_id)

    def target_of(self, member_id: str) -> Assignment:
        return self.target.get(member_id, EMPTY)

    def effective_target(self, member_id: str) -> tuple[int, Assignment]:
        """(epoch, assignment) a member takes: epoch 1 and nothing when no target was ever
        computed (seed 000)."""
        if self.assignment_epoch == 0:
            return EMPTY_ASSIGNMENT_EPOCH, EMPTY
        return self.assignment_epoch, self.target_of(member_id)

    def subscribed_topic_names(self) -> frozenset[str]:
        return frozenset(name for m in self.members.values() for name in
                         m.subscribed_topic_names)

    def validate_offset_commit(self, commit: object) -> ErrorCode:
        """Share groups keep no committed offsets: OffsetCommit on one is GROUP_ID_NOT_FOUND,
        as Kafka answers."""
        return ErrorCode.group_id_not_found

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode:
        """OffsetFetch on a share group is GROUP_ID_NOT_FOUND too."""
        return ErrorCode.group_id_not_found
