"""Which group may commit what: each group type's rule for OffsetCommit, in one place."""

from __future__ import annotations

from typing import Any

from coordinator.groups.classic.model import ClassicGroup
from coordinator.groups.classic.session import validate_offset_commit
from coordinator.groups.common.offsets import OffsetCommit
from protocol import ErrorCode


def validate_commit(shard: Any, commit: OffsetCommit) -> ErrorCode | None:
    """None when ``commit`` may be written; else the error for every partition in it."""
    group = shard.groups.get(commit.group_id)
    if group is None:
        return None  # no group: the offsets layer applies the rule for unknown groups
    if isinstance(group, ClassicGroup):
        return validate_offset_commit(group, commit.member_id, commit.group_instance_id,
                                      commit.generation_id)
    validator = getattr(group, "validate_offset_commit", None)
    return validator(commit) if validator is not None else None
