"""ShareGroupDescribe's view of a group: a snapshot taken on the group's partition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol import ErrorCode

from .model import GroupState, ShareGroup, ShareGroupMember


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    error: ErrorCode
    error_message: str | None = None
    state: str = GroupState.DEAD.value
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: tuple[ShareGroupMember, ...] = ()


def describe(shard: Any, group_id: str, assignor: str) -> GroupDescription:
    """The group's description (members with their current assignment), or
    GROUP_ID_NOT_FOUND when no share group holds the id."""
    group = shard.groups.get(group_id)
    if not isinstance(group, ShareGroup):
        message = (f"Group {group_id} not found." if group is None
                   else f"Group {group_id} is not a share group.")
        return GroupDescription(group_id, ErrorCode.group_id_not_found, message)
    return GroupDescription(group_id, ErrorCode.none, None, group.state.value,
                            group.group_epoch, group.assignment_epoch, assignor,
                            tuple(group.members.values()))
