"""What consumer group handlers need besides the shard: broker settings, topics, assignors."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from assignors import PartitionAssignor
from coordinator.groups.modern.env import NoTopics, TopicLookup, cached_assignor
from coordinator.groups.modern.settings import broker_configs

INT_MAX = 2**31 - 1


class TopicView(Protocol):
    name: str
    topic_id: uuid.UUID
    partitions: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupSettings:
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = INT_MAX
    assignors: tuple[str, ...] = ("uniform", "range")
    assignment_interval_ms: int = 1000
    assignor_offload: bool = True
    lag_options: tuple[tuple[str, object], ...] = ()
    """The lag assignor's broker configs, passed with each assignment spec."""
    migration_policy: str = "bidirectional"
    """``group.consumer.migration.policy``: bidirectional, upgrade, downgrade or disabled."""
    regex_refresh_interval_ms: int = 600000
    client_assignors: bool = False
    """``group.consumer.client.assignors.enable``: the draft's client-side assignors."""
    scheduled_rebalance_max_delay_ms: int = 0
    """Deferred resolution's delay (``imbalance``); 0 is off."""
    assignment_max_moves: int = 0
    """Incremental resolution's moves per target (``imbalance``); 0 is unbounded."""
    first_target_window_ms: int = 80
    """How long after the last member joined a new group's first offloaded run waits for more
    (``pacing``; not a config: 0 starts it at the first heartbeat, as seed 000 does)."""

    @classmethod
    def from_config(cls, config: Any) -> ConsumerGroupSettings:
        return cls(
            **broker_configs(config, "consumer"),
            assignors=tuple(config["group.consumer.assignors"]),
            regex_refresh_interval_ms=config["group.consumer.regex.refresh.interval.ms"],
            lag_options=tuple((name, config[name]) for name in (
                "group.consumer.lag.assignor.offset.reset",
                "group.consumer.lag.assignor.stickiness.tolerance")),
            migration_policy=config["group.consumer.migration.policy"],
            client_assignors=config["group.consumer.client.assignors.enable"],
            scheduled_rebalance_max_delay_ms=config[
                "group.consumer.scheduled.rebalance.max.delay.ms"],
            assignment_max_moves=config["group.consumer.assignment.max.moves"],
        )

    @property
    def default_assignor(self) -> str:
        return self.assignors[0]

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("bidirectional", "downgrade")


@dataclass(slots=True)
class ConsumerGroupEnv:
    settings: ConsumerGroupSettings
    topics: TopicLookup
    offloader: Any = None
    """Where offloaded assignor runs go (``groups.offload.Offloader``); None runs inline."""
    log_offsets: Any = None
    """``(topic, partition) -> (log start, log end) | None`` from the data plane, for lag."""
    partition_racks: Any = None
    """``(topic, partition count) ->`` each partition's replicas' racks, for the rack-aware
    assignors (``coordinator.cluster.racks``); None: no broker has a rack."""
    _assignors: dict[str, PartitionAssignor] = field(default_factory=dict)

    def assignor(self, name: str) -> PartitionAssignor:
        return cached_assignor(self._assignors, name)


_installed: ConsumerGroupEnv | None = None


def install(env: ConsumerGroupEnv) -> None:
    """Make ``env`` the one load hooks use (the app calls this before partitions load)."""
    global _installed
    _installed = env


def installed() -> ConsumerGroupEnv:
    return _installed or ConsumerGroupEnv(ConsumerGroupSettings(), NoTopics())


def subscribed_names(counts: Mapping[str, int]) -> list[str]:
    return [name for name, count in counts.items() if count > 0]


def env_for(broker: Any) -> ConsumerGroupEnv:
    """The installed environment, or one made from ``broker`` (and installed) if none is."""
    global _installed
    if _installed is None:
        _installed = ConsumerGroupEnv(ConsumerGroupSettings.from_config(broker.config),
                                      broker.image)
    return _installed
