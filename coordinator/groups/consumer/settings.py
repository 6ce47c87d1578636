"""A consumer group's effective settings: the broker's ``group.consumer.*`` configs with the
group's own ``consumer.*`` overrides applied."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator.groups.common.group_configs import consumer_overrides
from coordinator.groups.modern.settings import Settings, effective

from .env import ConsumerGroupEnv


@dataclass(frozen=True, slots=True)
class GroupSettings(Settings):
    """The broker's consumer group settings with the group's overrides applied."""

    scheduled_rebalance_max_delay_ms: int = 0
    assignment_max_moves: int = 0


def group_settings(shard: Any, env: ConsumerGroupEnv, group_id: str) -> GroupSettings:
    return effective(GroupSettings, consumer_overrides(shard, group_id), env.settings)
