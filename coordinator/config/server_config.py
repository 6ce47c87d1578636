"""The server's effective configuration: defaults, then a properties file, then overrides."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from .cluster import broker_specs
from .definitions import BROKER_CONFIGS_BY_NAME
from .listeners import Listener, parse_listener, resolve_advertised, resolve_listeners
from .model import ConfigDef, ConfigError
from .paths import check_log_dir

__all__ = ["Listener", "ServerConfig", "parse_listener"]

_LISTENER_PREFIX = "listener.name."
_JAAS = ".sasl.jaas.config"


STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
"""The one ``authorizer.class.name`` there is: Kafka's ACLs (``coordinator.security``)."""

# (lower bound key, value key, upper bound key): Kafka checks these together.
_BOUNDED_TRIPLES = [
    (f"group.{kind}.min.{what}", f"group.{kind}.{what}", f"group.{kind}.max.{what}")
    for kind in ("consumer", "share", "streams")
    for what in ("session.timeout.ms", "heartbeat.interval.ms", "assignment.interval.ms")
]


def check_http_listener(name: str, url: str) -> tuple[str, int]:
    """(host, port) of an ``http://host:port`` listener config; a ConfigError otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a port out of range, a broken IPv6 address
        port = None
    if port is None or parts.scheme != "http" or parts.path not in ("", "/"):
        raise ConfigError(name, url, "Expected http://host:port or an empty string")
    return parts.hostname or "", port


def check_control_listener(url: str) -> tuple[str, int]:
    """``control.listener``'s (host, port); a ConfigError unless it is ``http://host:port`` on a
    loopback address (the control endpoint has no authentication: it may not leave the
    machine)."""
    host, port = check_http_listener("control.listener", url)
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ConfigError("control.listener", url,
                              f"The control endpoint has no authentication, so it listens on "
                              f"a loopback address only (127.0.0.1, ::1 or localhost), not "
                              f"{host or 'every interface'!r}")
    return host, port


class ServerConfig:
    """Typed values by Kafka's names; ``explicit`` holds the keys the user set."""

    def __init__(self, values: Mapping[str, Any], explicit: frozenset[str],
                 unknown: Mapping[str, str], prefixed: Mapping[str, Any] | None = None) -> None:
        self._values = dict(values)
        self.explicit = explicit
        self.unknown = dict(unknown)
        self._prefixed = dict(prefixed or {})
        """Per-listener values by their full names (``listener.name.sasl_ssl.ssl.client.auth``)."""

    @classmethod
    def from_sources(cls, *sources: Mapping[str, Any]) -> ServerConfig:
        """Later sources win. Raises ``ConfigError`` with Kafka's message on a bad value."""
        raw: dict[str, Any] = {}
        for source in sources:
            raw.update(source)
        values: dict[str, Any] = {}
        unknown: dict[str, str] = {}
        prefixed: dict[str, Any] = {}
        for name, definition in BROKER_CONFIGS_BY_NAME.items():
            values[name] = definition.parse(raw[name]) if name in raw else definition.default
        for name, value in raw.items():
            if name in BROKER_CONFIGS_BY_NAME:
                continue
            per_listener = _listener_definition(name)
            if per_listener is None:
                unknown[name] = str(value)
            else:
                prefixed[name] = per_listener.parse(value)
        config = cls(values, frozenset(k for k in raw if k in BROKER_CONFIGS_BY_NAME), unknown,
                     prefixed)
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
        self.advertised_listeners  # noqa: B018  # raises ConfigError on a bad one
        if self["cluster.brokers"] > 1:
            broker_specs(self)  # raises ConfigError on a bad per-broker listener or rack
        if self["max.connections.per.ip"] == 0 and not self["max.connections.per.ip.overrides"]:
            raise ConfigError("max.connections.per.ip", 0,
                              "max.connections.per.ip can be set to zero only if "
                              "max.connections.per.ip.overrides property is set.")
        if len(self["log.dirs"]) != 1:
            raise ConfigError("log.dirs", ",".join(self["log.dirs"]),
                              "Exactly one log directory is supported")
        check_log_dir("log.dirs", self.log_dir)
        authorizer = self["authorizer.class.name"]
        if authorizer and authorizer != STANDARD_AUTHORIZER:
            raise ConfigError("authorizer.class.name", authorizer,
                              f"Class {authorizer} cannot be found")
        for principal in (self["super.users"] or "").split(";"):
            if principal.strip() and ":" not in principal:
                # Kafka's StandardAuthorizer parses each one as a KafkaPrincipal
                raise ConfigError("super.users", self["super.users"],
                                  "expected a string in format principalType:principalName "
                                  f"but got {principal.strip()}")
        metrics = self["metrics.listener"]
        if metrics:
            check_http_listener("metrics.listener", metrics)
        control = self["control.listener"]
        if control:
            check_control_listener(control)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def definition(self, name: str) -> ConfigDef:
        return BROKER_CONFIGS_BY_NAME[name]

    def items(self) -> list[tuple[str, Any]]:
        return sorted(self._values.items())

    @property
    def listeners(self) -> list[Listener]:
        """Each listener with its security protocol (``listener.security.protocol.map``)."""
        return resolve_listeners(self["listeners"], self["listener.security.protocol.map"])

    @property
    def advertised_listeners(self) -> list[Listener]:
        """What each listener advertises, in the order of ``listeners``."""
        return resolve_advertised(self.listeners, self["advertised.listeners"])

    def for_listener(self, listener: str, key: str) -> Any:
        """``key`` for one listener: ``listener.name.<listener>.<key>`` if set, else ``key``."""
        return self._prefixed.get(f"{_LISTENER_PREFIX}{listener.lower()}.{key}", self[key])

    def jaas_config(self, listener: str, mechanism: str) -> str | None:
        """The JAAS config of a SASL mechanism on a listener:
        ``listener.name.<listener>.<mechanism>.sasl.jaas.config``, else ``sasl.jaas.config``."""
        found = self._prefixed.get(
            f"{_LISTENER_PREFIX}{listener.lower()}.{mechanism.lower()}{_JAAS}")
        return found if found is not None else self["sasl.jaas.config"]

    @property
    def log_dir(self) -> str:
        return self["log.dirs"][0]


# Configs Kafka also reads per listener (``listener.name.<listener>.<key>``).
_PER_LISTENER = frozenset({
    "max.connections", "sasl.enabled.mechanisms", "sasl.server.max.receive.size",
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.certificate.chain",
    "ssl.keystore.key", "ssl.key.password", "ssl.truststore.type", "ssl.truststore.location",
    "ssl.truststore.certificates", "ssl.client.auth", "ssl.enabled.protocols",
})
_JAAS_MECHANISMS = ("plain", "scram-sha-256", "scram-sha-512")


def _listener_definition(name: str) -> ConfigDef | None:
    """The definition of a per-listener key (under its full name, so that a bad value's message
    names it), or None if ``name`` is not one."""
    if not name.startswith(_LISTENER_PREFIX):
        return None
    listener, _, key = name[len(_LISTENER_PREFIX):].partition(".")
    if not listener:
        return None
    if key in _PER_LISTENER:
        return replace(BROKER_CONFIGS_BY_NAME[key], name=name)
    mechanism, _, rest = key.rpartition(_JAAS)
    if not rest and mechanism in _JAAS_MECHANISMS:
        return replace(BROKER_CONFIGS_BY_NAME["sasl.jaas.config"], name=name)
    return None
