"""StreamsGroupDescribe's view of a group: a snapshot taken on the group's partition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator.groups.modern.describe import Description, described
from protocol import ErrorCode

from .model import GroupState, StreamsGroup, StreamsGroupMember, TasksTuple


@dataclass(frozen=True, slots=True)
class GroupDescription(Description):
    state: str = GroupState.DEAD.value
    topology: Any = None
    configured: Any = None
    members: tuple[tuple[StreamsGroupMember, TasksTuple], ...] = ()
    """Each member with its target assignment, by member id."""


def describe(shard: Any, group_id: str) -> GroupDescription:
    """The group's description, or GROUP_ID_NOT_FOUND when no streams group holds the id."""
    group, message = described(shard, group_id, StreamsGroup, "streams")
    if group is None:
        return GroupDescription(group_id, ErrorCode.group_id_not_found, message)
    return GroupDescription(
        group_id, ErrorCode.none, None, group.state.value, group.group_epoch,
        group.assignment_epoch, group.topology, group.configured,
        tuple((m, group.target_of(m.member_id)) for _, m in sorted(group.members.items())))
