"""ConsumerGroupDescribe's view of a group: a snapshot taken on the group's partition."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from coordinator.groups.modern.describe import Description, described
from protocol import ErrorCode

from .model import Assignment, ConsumerGroup, ConsumerGroupMember, GroupState


@dataclass(frozen=True, slots=True)
class GroupDescription(Description):
    state: GroupState = GroupState.DEAD
    assignor: str = ""
    members: tuple[tuple[ConsumerGroupMember, Assignment], ...] = ()


def describe(shard: Any, group_id: str, default_assignor: str) -> GroupDescription:
    group, message = described(shard, group_id, ConsumerGroup, "consumer")
    if group is None:
        return GroupDescription(group_id, ErrorCode.group_id_not_found, message)
    counts = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
    assignor = max(sorted(counts), key=lambda n: counts[n]) if counts else default_assignor
    client = group.client_assignment  # the target a client-side assignor computed (seed 003)
    if client is not None and client.assignment_epoch == group.assignment_epoch:
        assignor = client.assignor
    return GroupDescription(
        group_id, state=group.state, group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch, assignor=assignor,
        members=tuple((m, group.target_of(m.member_id)) for m in group.members.values()))
