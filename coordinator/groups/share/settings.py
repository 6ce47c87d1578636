"""A share group's effective settings: the broker's share group configs with the group's own
overrides (GroupConfig records) applied."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator.groups.common.group_configs import share_overrides
from coordinator.groups.modern.settings import Settings, effective

from .env import ShareGroupEnv


@dataclass(frozen=True, slots=True)
class GroupSettings(Settings):
    """The broker's share group settings with the group's overrides applied."""

    record_lock_duration_ms: int
    delivery_count_limit: int
    partition_max_record_locks: int
    auto_offset_reset: str


def group_settings(shard: Any, env: ShareGroupEnv, group_id: str) -> GroupSettings:
    """``auto_offset_reset`` has no broker config: the group's, or None (``latest``)."""
    return effective(GroupSettings, share_overrides(shard, group_id), env.settings)
