"""What streams group handlers need besides the shard: the broker's streams group configs, the
group's effective settings (its overrides applied), topics, and the offloader."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coordinator.groups.common.group_configs import streams_overrides
from coordinator.groups.modern.env import Installed, NoTopics, TopicLookup
from coordinator.groups.modern.settings import Settings, broker_configs, effective


@dataclass(frozen=True, slots=True)
class StreamsGroupSettings:
    """The broker's streams group configs (Kafka's names and defaults)."""

    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 2**31 - 1
    num_standby_replicas: int = 0
    initial_rebalance_delay_ms: int = 3000
    assignment_interval_ms: int = 1000
    assignor_offload: bool = True
    scheduled_rebalance_max_delay_ms: int = 0
    """Deferred resolution's delay (``imbalance``); 0 is off."""
    assignment_max_moves: int = 0
    """Incremental resolution's moves per target (``imbalance``); 0 is unbounded."""

    @classmethod
    def from_config(cls, config: Any) -> StreamsGroupSettings:
        return cls(
            **broker_configs(config, "streams"),
            num_standby_replicas=config["group.streams.num.standby.replicas"],
            initial_rebalance_delay_ms=config["group.streams.initial.rebalance.delay.ms"],
            scheduled_rebalance_max_delay_ms=config[
                "group.streams.scheduled.rebalance.max.delay.ms"],
            assignment_max_moves=config["group.streams.assignment.max.moves"],
        )


@dataclass(slots=True)
class StreamsGroupEnv:
    settings: StreamsGroupSettings = field(default_factory=StreamsGroupSettings)
    topics: TopicLookup = field(default_factory=NoTopics)
    offloader: Any = None
    """Where offloaded assignor runs go (``common.offload.Offloader``); None runs inline."""


@dataclass(frozen=True, slots=True)
class GroupSettings(Settings):
    """The broker's streams group settings with the group's overrides applied."""

    num_standby_replicas: int
    initial_rebalance_delay_ms: int
    scheduled_rebalance_max_delay_ms: int = 0
    assignment_max_moves: int = 0


def group_settings(shard: Any, env: StreamsGroupEnv, group_id: str) -> GroupSettings:
    return effective(GroupSettings, streams_overrides(shard, group_id), env.settings)


_ENV: Installed[StreamsGroupEnv] = Installed(StreamsGroupEnv)
install = _ENV.install
installed = _ENV.installed


def env_for(broker: Any) -> StreamsGroupEnv:
    """The installed environment, or one made from ``broker`` (and installed) if none is."""
    return _ENV.env_for(broker, lambda broker: StreamsGroupEnv(
        StreamsGroupSettings.from_config(broker.config), broker.image))
