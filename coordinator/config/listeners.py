"""``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map``, as Kafka reads
and checks them: a listener is ``NAME://host:port``; its security protocol is its entry in the
map (a listener named after a protocol needs none in the default map); names are unique, and
so are ports other than 0; advertised names are a subset of the listeners'."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import ConfigError
from .security import SECURITY_PROTOCOLS


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    @property
    def config_prefix(self) -> str:
        """Kafka's ``ListenerName.configPrefix``: ``listener.name.<name, lowercased>.``."""
        return f"listener.name.{self.name.lower()}."


# Kafka's SocketServerConfigs.URI_PARSE_REGEXP (a listener name may hold '_', which a URL
# scheme may not, so urlsplit does not do).
_URI = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


def parse_listener(name: str, text: str) -> Listener:
    match = _URI.match(text.strip())
    if match is None:
        if "://" in text and re.fullmatch(r".*://.*:.*", text.strip()):
            raise ConfigError(name, text, "Unable to parse listener port")
        raise ConfigError(name, text, "Unable to parse listener: expected NAME://host:port")
    listener, host, port = match.groups()
    if not listener:
        raise ConfigError(name, text, "Unable to parse listener: expected NAME://host:port")
    if not 0 <= int(port) <= 65535:
        raise ConfigError(name, text, "Unable to parse listener port")
    return Listener(listener.upper(), host, int(port))


def parse_protocol_map(text: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` -> {NAME: PROTOCOL}; Kafka's messages for a bad entry."""
    key = "listener.security.protocol.map"
    result: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name or not protocol:
            raise ConfigError(key, text, f"Map entry '{item}' is not of the form NAME:PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(key, text, f"Unknown security protocol {protocol} for listener "
                              f"{name}; expected one of {', '.join(SECURITY_PROTOCOLS)}")
        if name in result:
            raise ConfigError(key, text, f"Duplicate key {name}")
        result[name] = protocol
    return result


def resolve_listeners(listeners: list[str], protocol_map: str) -> list[Listener]:
    """The listeners with their security protocols, checked together as Kafka does."""
    protocols = parse_protocol_map(protocol_map)
    text = ",".join(listeners)
    resolved = []
    for item in listeners:
        parsed = parse_listener("listeners", item)
        protocol = protocols.get(parsed.name)
        if protocol is None:
            raise ConfigError("listeners", text,
                              f"No security protocol defined for listener {parsed.name}")
        resolved.append(Listener(parsed.name, parsed.host, parsed.port, protocol))
    names = [listener.name for listener in resolved]
    if len(set(names)) != len(names):
        raise ConfigError("listeners", text,
                          f"Each listener must have a different name, listeners: {text}")
    ports = [listener.port for listener in resolved if listener.port != 0]
    if len(set(ports)) != len(ports):
        raise ConfigError("listeners", text,
                          f"Each listener must have a different port, listeners: {text}")
    return resolved


def resolve_advertised(listeners: list[Listener], advertised: list[str] | None) -> list[Listener]:
    """What each listener advertises (Metadata, FindCoordinator): its entry in
    ``advertised.listeners``, else the listener itself."""
    if not advertised:
        return list(listeners)
    by_name = {listener.name: listener for listener in listeners}
    given = {}
    for item in advertised:
        parsed = parse_listener("advertised.listeners", item)
        if parsed.name not in by_name:
            raise ConfigError(
                "advertised.listeners", ",".join(advertised),
                "advertised.listeners listener names must be equal to or a subset of the ones "
                f"defined in listeners. Found {parsed.name}. The valid options based on the "
                f"current configuration are {','.join(by_name)}")
        given[parsed.name] = Listener(parsed.name, parsed.host, parsed.port,
                                      by_name[parsed.name].security_protocol)
    return [given.get(listener.name, listener) for listener in listeners]
