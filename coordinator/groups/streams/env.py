"""What streams group handlers need besides the shard: the broker's streams group configs, the
group's effective settings (its overrides applied), topics, and the offloader."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from coordinator.groups.common.group_configs import streams_overrides


class TopicLookup(Protocol):
    """The part of ``MetadataImage`` the handlers read."""

    def topic(self, name: str) -> Any: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> Any: ...


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

    @classmethod
    def from_config(cls, config: Any) -> StreamsGroupSettings:
        return cls(
            session_timeout_ms=config["group.streams.session.timeout.ms"],
            heartbeat_interval_ms=config["group.streams.heartbeat.interval.ms"],
            max_size=config["group.streams.max.size"],
            num_standby_replicas=config["group.streams.num.standby.replicas"],
            initial_rebalance_delay_ms=config["group.streams.initial.rebalance.delay.ms"],
            assignment_interval_ms=config["group.streams.assignment.interval.ms"],
            assignor_offload=config["group.streams.assignor.offload.enable"],
        )


class _NoTopics:
    def topic(self, name: str) -> Any:
        return None

    def topic_by_id(self, topic_id: uuid.UUID) -> Any:
        return None


@dataclass(slots=True)
class StreamsGroupEnv:
    settings: StreamsGroupSettings = field(default_factory=StreamsGroupSettings)
    topics: TopicLookup = field(default_factory=_NoTopics)
    offloader: Any = None
    """Where offloaded assignor runs go (``common.offload.Offloader``); None runs inline."""


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """The broker's streams group settings with the group's overrides applied."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    num_standby_replicas: int
    initial_rebalance_delay_ms: int
    assignment_interval_ms: int
    assignor_offload: bool


def group_settings(shard: Any, env: StreamsGroupEnv, group_id: str) -> GroupSettings:
    broker = env.settings
    own = streams_overrides(shard, group_id)

    def pick(value: Any, default: Any) -> Any:
        return default if value is None else value

    return GroupSettings(
        pick(own.session_timeout_ms, broker.session_timeout_ms),
        pick(own.heartbeat_interval_ms, broker.heartbeat_interval_ms),
        pick(own.num_standby_replicas, broker.num_standby_replicas),
        pick(own.initial_rebalance_delay_ms, broker.initial_rebalance_delay_ms),
        pick(own.assignment_interval_ms, broker.assignment_interval_ms),
        pick(own.assignor_offload, broker.assignor_offload))


_installed: StreamsGroupEnv | None = None


def install(env: StreamsGroupEnv) -> None:
    """Make ``env`` the one load hooks and timers use (the app calls this before partitions
    load)."""
    global _installed
    _installed = env


def installed() -> StreamsGroupEnv:
    return _installed or StreamsGroupEnv()


def env_for(broker: Any) -> StreamsGroupEnv:
    """The installed environment, or one made from ``broker`` (and installed) if none is."""
    global _installed
    if _installed is None:
        _installed = StreamsGroupEnv(StreamsGroupSettings.from_config(broker.config),
                                     broker.image)
    return _installed
