"""The part of a describe answer (ConsumerGroupDescribe, ShareGroupDescribe,
StreamsGroupDescribe) every group type shares: the group found by id, or GROUP_ID_NOT_FOUND
with Kafka's message; each type's description adds its own fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from protocol import ErrorCode

G = TypeVar("G")


@dataclass(frozen=True, slots=True)
class Description:
    group_id: str
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    state: Any = None
    group_epoch: int = 0
    assignment_epoch: int = 0


def described(shard: Any, group_id: str, group_class: type[G], kind: str
              ) -> tuple[G | None, str | None]:
    """(the ``kind`` group holding ``group_id``, None), or (None, why none does)."""
    group = shard.groups.get(group_id)
    if isinstance(group, group_class):
        return group, None
    return None, (f"Group {group_id} not found." if group is None
                  else f"Group {group_id} is not a {kind} group.")
