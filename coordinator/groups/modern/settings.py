"""A group's effective settings: each field the group overrides (its ``<type>.*`` group
configs, ``common.group_configs``) takes the override, the others the broker's
``group.<type>.*`` config. One resolution for every group type; each type names its fields."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, TypeVar

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Settings:
    """The effective settings every modern group type has; each type's ``GroupSettings``
    adds its own."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    assignment_interval_ms: int
    assignor_offload: bool


def broker_configs(config: Any, kind: str) -> dict[str, Any]:
    """The ``group.<kind>.*`` broker configs every modern group type has, by field name (a
    type's ``<Type>GroupSettings.from_config`` adds its own)."""
    prefix = f"group.{kind}."
    return {
        "session_timeout_ms": config[prefix + "session.timeout.ms"],
        "heartbeat_interval_ms": config[prefix + "heartbeat.interval.ms"],
        "max_size": config[prefix + "max.size"],
        "assignment_interval_ms": config[prefix + "assignment.interval.ms"],
        "assignor_offload": config[prefix + "assignor.offload.enable"],
    }


@dataclass(frozen=True, slots=True)
class ImbalancePolicy:
    """Seed 004's policies of a group (``deferred``, ``incremental``), from its effective
    settings' ``scheduled_rebalance_max_delay_ms`` and ``assignment_max_moves``."""

    delay_ms: int = 0
    """Deferred resolution: how long a removed member's partitions (tasks) are held (0: off)."""
    max_moves: int = 0
    """Incremental resolution: the most moves per target (0: unbounded)."""

    @property
    def on(self) -> bool:
        return self.delay_ms > 0 or self.max_moves > 0

    @classmethod
    def of(cls, settings: Any) -> ImbalancePolicy:
        return cls(int(getattr(settings, "scheduled_rebalance_max_delay_ms", 0) or 0),
                   int(getattr(settings, "assignment_max_moves", 0) or 0))


_FIELDS: dict[type, tuple[str, ...]] = {}


_EFFECTIVE: dict[tuple[type, int, int], tuple[Any, Any, Any]] = {}
_EFFECTIVE_KEPT = 10_000


def effective(cls: type[S], own: Any, broker: Any) -> S:
    """``cls`` (a dataclass) with each field the group's override ``own`` has (not None), else
    the broker's; a field the broker has no config for is the group's alone. Every heartbeat
    asks, and both are frozen (an override changes by being replaced): the answer is kept per
    pair of objects."""
    key = (cls, id(own), id(broker))
    kept = _EFFECTIVE.get(key)
    if kept is not None and kept[0] is own and kept[1] is broker:
        result: S = kept[2]
        return result
    result = _effective(cls, own, broker)
    if len(_EFFECTIVE) >= _EFFECTIVE_KEPT:
        _EFFECTIVE.clear()
    _EFFECTIVE[key] = (own, broker, result)
    return result


def _effective(cls: type[S], own: Any, broker: Any) -> S:
    values = {}
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    for name in names:
        value = getattr(own, name)
        values[name] = getattr(broker, name) if value is None and hasattr(broker, name) \
            else value
    return cls(**values)
