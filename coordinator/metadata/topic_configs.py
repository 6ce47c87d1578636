"""A topic's configs as Kafka resolves them, and Kafka's config-alteration operations on them.

A topic config's value is the topic's override (``DYNAMIC_TOPIC_CONFIG``), else its broker
synonym set in the server's properties (``STATIC_BROKER_CONFIG``, e.g. ``log.retention.ms``
for ``retention.ms``), else the default (``DEFAULT_CONFIG``, the broker synonym's default
where there is one). DescribeConfigs shows that chain as the synonyms; the data plane obeys its
head. ``incremental`` applies IncrementalAlterConfigs' SET/DELETE/APPEND/SUBTRACT as Kafka's
controller does; the result is validated by ``topic_admin.validate_topic_configs``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from coordinator.config import ConfigDef
from coordinator.config.definitions import TOPIC_CONFIGS_BY_NAME
from coordinator.config.model import ConfigType
from protocol import ErrorCode


class ConfigSource(IntEnum):
    """Kafka's DescribeConfigs ``ConfigSource`` codes."""

    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8


# Topic config -> the broker config that supplies its default (Kafka's LogConfig synonyms), for
# the broker configs this server has.
BROKER_SYNONYMS: dict[str, str] = {
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "max.message.bytes": "message.max.bytes",
    "retention.ms": "log.retention.ms",
    "segment.bytes": "log.segment.bytes",
}

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
AlterOp = tuple[str, int, str | None]
"""(config name, IncrementalAlterConfigs operation, value)."""


@dataclass(frozen=True, slots=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


class AlterError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def synonyms(definition: ConfigDef, overrides: Mapping[str, str],
             broker_config: Any) -> list[Synonym]:
    """Where the topic config's value can come from, most binding first; never empty."""
    chain: list[Synonym] = []
    name = definition.name
    if name in overrides:
        chain.append(Synonym(name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
    broker_name = BROKER_SYNONYMS.get(name)
    if broker_name is None:
        chain.append(Synonym(name, definition.render(definition.default),
                             ConfigSource.DEFAULT_CONFIG))
        return chain
    broker_def = broker_config.definition(broker_name)
    if broker_name in broker_config.explicit:
        chain.append(Synonym(broker_name, broker_def.render(broker_config[broker_name]),
                             ConfigSource.STATIC_BROKER_CONFIG))
    chain.append(Synonym(broker_name, broker_def.render(broker_def.default),
                         ConfigSource.DEFAULT_CONFIG))
    return chain


def effective(name: str, overrides: Mapping[str, str], broker_config: Any) -> Any:
    """The typed value the data plane obeys."""
    definition = TOPIC_CONFIGS_BY_NAME[name]
    if name in overrides:
        return definition.parse(overrides[name])
    broker_name = BROKER_SYNONYMS.get(name)
    return definition.default if broker_name is None else broker_config[broker_name]


def _current_list(name: str, value: str | None) -> list[str]:
    if value is not None:
        return [item for item in value.split(",") if item]
    definition = TOPIC_CONFIGS_BY_NAME[name]
    return list(definition.default or [])


def incremental(current: Mapping[str, str], ops: Sequence[AlterOp]) -> dict[str, str]:
    """The overrides after IncrementalAlterConfigs' ``ops`` (not yet validated)."""
    names = [name for name, _, _ in ops]
    if len(set(names)) != len(names):
        raise AlterError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    nulls = [name for name, op, value in ops if op != DELETE and value is None]
    if nulls:
        raise AlterError(ErrorCode.invalid_request,
                         f"Null value not supported for : {', '.join(nulls)}")
    new = dict(current)
    for name, op, value in ops:
        if op == SET:
            assert value is not None
            new[name] = value
        elif op == DELETE:
            new.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            verb = "APPEND" if op == APPEND else "SUBTRACT"
            definition = TOPIC_CONFIGS_BY_NAME.get(name)
            if definition is None or definition.type is not ConfigType.LIST:
                raise AlterError(ErrorCode.invalid_config,
                                 f"Can't {verb} to key {name} because its type is not LIST.")
            assert value is not None
            items = _current_list(name, new.get(name))
            for item in value.split(","):
                if op == APPEND and item not in items:
                    items.append(item)
                elif op == SUBTRACT and item in items:
                    items.remove(item)
            new[name] = ",".join(items)
        else:
            raise AlterError(ErrorCode.invalid_request, f"Unknown operations type {op}")
    return new


def legacy_from(configs: Sequence[tuple[str, str | None]]
                ) -> Callable[[Mapping[str, str]], dict[str, str]]:
    """AlterConfigs' overrides, as a function of the current ones (which it ignores)."""
    return lambda _current: legacy(configs)


def legacy(configs: Sequence[tuple[str, str | None]]) -> dict[str, str]:
    """AlterConfigs' overrides: exactly the given configs, replacing all others."""
    names = [name for name, _ in configs]
    if len(set(names)) != len(names):
        raise AlterError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    nulls = [name for name, value in configs if value is None]
    if nulls:
        raise AlterError(ErrorCode.invalid_request,
                         f"Null value not supported for : {', '.join(nulls)}")
    return {name: value for name, value in configs if value is not None}
