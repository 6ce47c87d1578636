"""Which group may commit what: each group type's rule for OffsetCommit, in one place."""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from ..offsets import OffsetCommit
from .classic_model import ClassicGroup
from .classic_session import validate_offset_commit


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
