"""A consumer group's effective settings: the broker's ``group.consumer.*`` configs with the
group's own ``consumer.*`` overrides applied."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator.groups.common.group_configs import consumer_overrides
from coordinator.groups.modern.settings import effective

from .env import ConsumerGroupEnv


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """The broker's consumer group settings with the group's overrides applied."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    assignment_interval_ms: int
    assignor_offload: bool


def group_settings(shard: Any, env: ConsumerGroupEnv, group_id: str) -> GroupSettings:
    return effective(GroupSettings, consumer_overrides(shard, group_id), env.settings)
