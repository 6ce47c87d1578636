"""The broker configs each group type reads, as plain values for the pure handlers."""

from __future__ import annotations

from typing import Any

from ..config import ServerConfig
from .classic import ClassicConfig


def group_configs(config: ServerConfig | None) -> ClassicConfig:
    source: Any = config if config is not None else ServerConfig.from_sources({})
    return ClassicConfig(
        min_session_timeout_ms=source["group.min.session.timeout.ms"],
        max_session_timeout_ms=source["group.max.session.timeout.ms"],
        initial_rebalance_delay_ms=source["group.initial.rebalance.delay.ms"],
        max_size=source["group.max.size"],
    )
