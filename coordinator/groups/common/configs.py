"""The broker configs each group type reads, as plain values for the pure handlers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator.config import ServerConfig


@dataclass(frozen=True, slots=True)
class ClassicConfig:
    min_session_timeout_ms: int
    max_session_timeout_ms: int
    initial_rebalance_delay_ms: int
    max_size: int


@dataclass(frozen=True, slots=True)
class OffsetsRetention:
    retention_ms: int
    check_interval_ms: int


def offsets_retention(config: ServerConfig | None) -> OffsetsRetention:
    source: Any = config if config is not None else ServerConfig.from_sources({})
    return OffsetsRetention(retention_ms=source["offsets.retention.minutes"] * 60_000,
                            check_interval_ms=source["offsets.retention.check.interval.ms"])


def classic_config(config: ServerConfig | None) -> ClassicConfig:
    source: Any = config if config is not None else ServerConfig.from_sources({})
    return ClassicConfig(
        min_session_timeout_ms=source["group.min.session.timeout.ms"],
        max_session_timeout_ms=source["group.max.session.timeout.ms"],
        initial_rebalance_delay_ms=source["group.initial.rebalance.delay.ms"],
        max_size=source["group.max.size"],
    )
