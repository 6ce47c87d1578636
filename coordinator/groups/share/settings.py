"""A share group's effective settings: the broker's share group configs with the group's own
overrides (GroupConfig records) applied."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator.groups.common.group_configs import share_overrides

from .env import ShareGroupEnv


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """The broker's share group settings with the group's overrides applied."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    assignment_interval_ms: int
    assignor_offload: bool
    record_lock_duration_ms: int
    delivery_count_limit: int
    partition_max_record_locks: int
    auto_offset_reset: str


def group_settings(shard: Any, env: ShareGroupEnv, group_id: str) -> GroupSettings:
    broker = env.settings
    own = share_overrides(shard, group_id)

    def pick(value: Any, default: Any) -> Any:
        return default if value is None else value

    return GroupSettings(
        pick(own.session_timeout_ms, broker.session_timeout_ms),
        pick(own.heartbeat_interval_ms, broker.heartbeat_interval_ms),
        pick(own.assignment_interval_ms, broker.assignment_interval_ms),
        pick(own.assignor_offload, broker.assignor_offload),
        pick(own.record_lock_duration_ms, broker.record_lock_duration_ms),
        pick(own.delivery_count_limit, broker.delivery_count_limit),
        pick(own.partition_max_record_locks, broker.partition_max_record_locks),
        own.auto_offset_reset)
