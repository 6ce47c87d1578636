"""Client-metrics subscriptions (KIP-714): the CLIENT_METRICS config resources.

A subscription is a named config resource with Kafka's three configs (``ClientMetricsConfigs``):
``metrics`` (metric name prefixes, ``*`` for all), ``interval.ms`` (the push interval, 100 ms to
one hour, default five minutes) and ``match`` (``selector=regex`` entries over a client's
``client_id``, ``client_instance_id``, ``client_software_name``, ``client_software_version``,
``client_source_address`` and ``client_source_port``; all must match; none matches every client).
They are stored as Kafka's ``ConfigRecord``s (one per config; a tombstone deletes one) in
``__cluster_metadata-0`` and replayed from there on start into the metadata image's config
resources (``coordinator/metadata/config_resources.py``), which these subscriptions follow. The
broker configs ``telemetry.default.metrics`` / ``telemetry.default.interval.ms`` give a built-in
subscription named ``default`` (the ``test`` profile sets one); configs stored under that name
override it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coordinator.config import ConfigDef
from coordinator.config.model import ConfigType
from coordinator.metadata import config_resources
from coordinator.metadata.config_resources import CLIENT_METRICS, ConfigRecord, ConfigResources

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
ALL_METRICS = "*"
DEFAULT_INTERVAL_MS = 5 * 60 * 1000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
DEFAULT_NAME = "default"
SELECTORS = ("client_instance_id", "client_id", "client_software_name",
             "client_software_version", "client_source_address", "client_source_port")

DEFINITIONS: tuple[ConfigDef, ...] = (
    ConfigDef(METRICS, ConfigType.LIST, [], "Subscription metrics list"),
    ConfigDef(INTERVAL_MS, ConfigType.INT, DEFAULT_INTERVAL_MS, "Push interval in milliseconds"),
    ConfigDef(MATCH, ConfigType.LIST, [], "Client match pattern list"),
)
NAMES = tuple(d.name for d in DEFINITIONS)


class SubscriptionError(Exception):
    """Kafka's INVALID_REQUEST (``invalid_config`` False) or INVALID_CONFIG, with its message."""

    def __init__(self, message: str, invalid_config: bool = False) -> None:
        super().__init__(message)
        self.invalid_config = invalid_config


def split_list(value: str) -> list[str]:
    """A LIST config's value as Kafka parses it: comma-separated, trimmed, empty for ''."""
    return [] if not value.strip() else [item.strip() for item in value.split(",")]


def parse_patterns(patterns: Iterable[str]) -> dict[str, re.Pattern[str]]:
    """``selector=regex`` entries by selector (Kafka's ``parseMatchingPatterns``)."""
    out: dict[str, re.Pattern[str]] = {}
    for pattern in patterns:
        parts = pattern.split("=")
        if len(parts) != 2 or parts[0].strip() not in SELECTORS:
            raise SubscriptionError(f"Illegal client matching pattern: {pattern}",
                                    invalid_config=True)
        try:
            out[parts[0].strip()] = re.compile(parts[1].strip())
        except re.error:
            raise SubscriptionError(f"Illegal client matching pattern: {pattern}",
                                    invalid_config=True) from None
    return out


def validate(name: str, configs: Mapping[str, str]) -> None:
    """Kafka's ``ClientMetricsConfigs.validate``."""
    if not name:
        raise SubscriptionError("Subscription name can't be empty")
    for key in configs:
        if key not in NAMES:
            raise SubscriptionError(f"Unknown client metrics configuration: {key}")
    if INTERVAL_MS in configs:
        try:
            interval = int(configs[INTERVAL_MS].strip())
        except ValueError:
            raise SubscriptionError(
                f"Invalid value {configs[INTERVAL_MS]} for configuration {INTERVAL_MS}: "
                "Not a number of type INT", invalid_config=True) from None
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise SubscriptionError(
                f"Invalid value {interval} for {INTERVAL_MS}, interval must be between 100 and "
                "3600000 (1 hour)")
    if MATCH in configs:
        parse_patterns(split_list(configs[MATCH]))


@dataclass(frozen=True, slots=True)
class Subscription:
    name: str
    metrics: frozenset[str]
    interval_ms: int
    match: Mapping[str, re.Pattern[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, configs: Mapping[str, str]) -> Subscription:
        return cls(name, frozenset(split_list(configs.get(METRICS, ""))),
                   int(configs.get(INTERVAL_MS, DEFAULT_INTERVAL_MS)),
                   parse_patterns(split_list(configs.get(MATCH, ""))))

    def matches(self, client: Mapping[str, str]) -> bool:
        """Every pattern matches its selector's whole value (Java's ``Matcher.matches``)."""
        for selector, pattern in self.match.items():
            value = client.get(selector)
            if value is None or pattern.fullmatch(value) is None:
                return False
        return True


class Subscriptions:
    """Every subscription: the stored configs (the CLIENT_METRICS resources of ``resources``,
    the metadata image's) over the built-in ones. ``version`` grows on every change, so client
    instances know to re-evaluate theirs."""

    def __init__(self, builtin: Mapping[str, Mapping[str, str]] | None = None,
                 resources: ConfigResources | None = None) -> None:
        self._builtin = {name: dict(c) for name, c in (builtin or {}).items()}
        self.resources = ConfigResources() if resources is None else resources
        self._stored = self.resources.of_type(CLIENT_METRICS)
        self.resources.subscribe(self._changed)
        self.version = 0
        self._active: dict[str, Subscription] = {}
        self._rebuild()

    @classmethod
    def from_config(cls, config: Any, resources: ConfigResources | None = None
                    ) -> Subscriptions:
        """From a ``ServerConfig``'s ``telemetry.default.*`` values."""
        metrics = config["telemetry.default.metrics"]
        assert isinstance(metrics, list)
        builtin = {}
        if metrics:
            builtin[DEFAULT_NAME] = {METRICS: ",".join(metrics),
                                     INTERVAL_MS: str(config["telemetry.default.interval.ms"])}
        return cls(builtin, resources)

    def names(self) -> list[str]:
        return sorted(self._active)

    def stored(self, name: str) -> dict[str, str]:
        """The configs set on ``name`` (by IncrementalAlterConfigs, or built in)."""
        return {**self._builtin.get(name, {}), **self._stored.get(name, {})}

    def explicit(self, name: str) -> dict[str, str]:
        """The configs IncrementalAlterConfigs stored under ``name``."""
        return dict(self._stored.get(name, {}))

    def active(self) -> Iterable[Subscription]:
        return self._active.values()

    def replay(self, key: object, value: object) -> bool:
        """Apply a ConfigRecord of a CLIENT_METRICS resource; False for any other record."""
        if getattr(key, "resource_type", None) != CLIENT_METRICS:
            return False
        return self.resources.replay(key, value)

    def _changed(self, resource_type: int, _name: str) -> None:
        if resource_type == CLIENT_METRICS:
            self._rebuild()

    def _rebuild(self) -> None:
        active = {}
        for name in {*self._builtin, *self._stored}:
            configs = self.stored(name)
            try:
                active[name] = Subscription.of(name, configs)
            except (SubscriptionError, ValueError):
                continue  # validated before it was written: only a hand-edited store gets here
        self._active = active
        self.version += 1


def records(name: str, old: Mapping[str, str], new: Mapping[str, str]) -> list[ConfigRecord]:
    """The ConfigRecords that turn subscription ``name``'s ``old`` configs into ``new``."""
    return config_resources.records(CLIENT_METRICS, name, old, new)


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def altered(current: Mapping[str, str], ops: Sequence[tuple[str, int, str | None]]
            ) -> dict[str, str]:
    """The configs after IncrementalAlterConfigs' operations (APPEND/SUBTRACT on the lists)."""
    new = dict(current)
    for name, operation, value in ops:
        if name not in NAMES:
            raise SubscriptionError(f"Unknown client metrics configuration: {name}")
        if operation == SET:
            if value is None:
                raise SubscriptionError(f"Null value not supported for : {name}")
            new[name] = value
        elif operation == DELETE:
            new.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            if name == INTERVAL_MS:
                verb = "append" if operation == APPEND else "subtract"
                raise SubscriptionError(
                    f"Config value {verb} is not allowed for config key: {name}",
                    invalid_config=True)
            items = split_list(new.get(name, ""))
            given = split_list(value or "")
            if operation == APPEND:
                items += [item for item in given if item not in items]
            else:
                items = [item for item in items if item not in given]
            new[name] = ",".join(items)
        else:
            raise SubscriptionError(f"Unknown alter config operation {operation}")
    return new
