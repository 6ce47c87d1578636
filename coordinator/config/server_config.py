"""The server's effective configuration: defaults, then a properties file, then overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .definitions import BROKER_CONFIGS_BY_NAME
from .model import ConfigDef, ConfigError


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str
    port: int


def parse_listener(name: str, text: str) -> Listener:
    parts = urlsplit(text)
    if not parts.scheme or (parts.port is None and ":" not in parts.netloc):
        raise ConfigError(name, text, "Unable to parse listener: expected NAME://host:port")
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(name, text, "Unable to parse listener port") from None
    if port is None:
        raise ConfigError(name, text, "Unable to parse listener port")
    return Listener(parts.scheme.upper(), parts.hostname or "", port)


# (lower bound key, value key, upper bound key): Kafka checks these together.
_BOUNDED_TRIPLES = [
    (f"group.{kind}.min.{what}", f"group.{kind}.{what}", f"group.{kind}.max.{what}")
    for kind in ("consumer", "share", "streams")
    for what in ("session.timeout.ms", "heartbeat.interval.ms", "assignment.interval.ms")
]


class ServerConfig:
    """Typed values by Kafka's names; ``explicit`` holds the keys the user set."""

    def __init__(self, values: Mapping[str, Any], explicit: frozenset[str],
                 unknown: Mapping[str, str]) -> None:
        self._values = dict(values)
        self.explicit = explicit
        self.unknown = dict(unknown)

    @classmethod
    def from_sources(cls, *sources: Mapping[str, Any]) -> ServerConfig:
        """Later sources win. Raises ``ConfigError`` with Kafka's message on a bad value."""
        raw: dict[str, Any] = {}
        for source in sources:
            raw.update(source)
        values: dict[str, Any] = {}
        unknown: dict[str, str] = {}
        for name, definition in BROKER_CONFIGS_BY_NAME.items():
            values[name] = definition.parse(raw[name]) if name in raw else definition.default
        for name, value in raw.items():
            if name not in BROKER_CONFIGS_BY_NAME:
                unknown[name] = str(value)
        config = cls(values, frozenset(k for k in raw if k in BROKER_CONFIGS_BY_NAME), unknown)
        config._validate_together()
        return config

    def _validate_together(self) -> None:
        for low_key, key, high_key in _BOUNDED_TRIPLES:
            low, value, high = self[low_key], self[key], self[high_key]
            if value < low:
                raise ConfigError(key, value, f"Value must be at least {low_key} ({low})")
            if value > high:
                raise ConfigError(key, value, f"Value must be no more than {high_key} ({high})")
        for kind in ("consumer", "share", "streams"):
            heartbeat = f"group.{kind}.heartbeat.interval.ms"
            session = f"group.{kind}.session.timeout.ms"
            if self[heartbeat] >= self[session]:
                raise ConfigError(heartbeat, self[heartbeat],
                                  f"{heartbeat} must be less than {session}")
        if self["group.min.session.timeout.ms"] > self["group.max.session.timeout.ms"]:
            raise ConfigError("group.min.session.timeout.ms", self["group.min.session.timeout.ms"],
                              "must be no more than group.max.session.timeout.ms")
        if not self.listeners:
            raise ConfigError("listeners", "", "At least one listener is required")
        if len(self["log.dirs"]) != 1:
            raise ConfigError("log.dirs", ",".join(self["log.dirs"]),
                              "Exactly one log directory is supported")
        metrics = self["metrics.listener"]
        if metrics:
            parts = urlsplit(metrics)
            try:
                port = parts.port
            except ValueError:
                port = None
            if parts.scheme != "http" or port is None:
                raise ConfigError("metrics.listener", metrics,
                                  "Expected http://host:port or an empty string")

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def definition(self, name: str) -> ConfigDef:
        return BROKER_CONFIGS_BY_NAME[name]

    def items(self) -> list[tuple[str, Any]]:
        return sorted(self._values.items())

    @property
    def listeners(self) -> list[Listener]:
        return [parse_listener("listeners", item) for item in self["listeners"]]

    @property
    def advertised_listeners(self) -> list[Listener]:
        advertised = self["advertised.listeners"]
        if not advertised:
            return self.listeners
        return [parse_listener("advertised.listeners", item) for item in advertised]

    @property
    def log_dir(self) -> str:
        return self["log.dirs"][0]
