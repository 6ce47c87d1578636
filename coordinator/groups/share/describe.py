"""ShareGroupDescribe's view of a group: a snapshot taken on the group's partition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator.groups.modern.describe import Description, described
from protocol import ErrorCode

from .model import GroupState, ShareGroup, ShareGroupMember


@dataclass(frozen=True, slots=True)
class GroupDescription(Description):
    state: str = GroupState.DEAD.value
    assignor: str = ""
    members: tuple[ShareGroupMember, ...] = ()


def describe(shard: Any, group_id: str, assignor: str) -> GroupDescription:
    """The group's description (members with their current assignment), or
    GROUP_ID_NOT_FOUND when no share group holds the id."""
    group, message = described(shard, group_id, ShareGroup, "share")
    if group is None:
        return GroupDescription(group_id, ErrorCode.group_id_not_found, message)
    return GroupDescription(group_id, ErrorCode.none, None, group.state.value,
                            group.group_epoch, group.assignment_epoch, assignor,
                            tuple(group.members.values()))
