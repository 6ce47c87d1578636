"""The brokers of ``cluster.brokers`` and what each listens on, advertises and is racked in.

Broker 1 (``node.id``) has ``listeners``/``advertised.listeners``/``broker.rack``. Brokers 2..N
(node ids ``node.id`` + 1 ...) listen on ``cluster.listeners`` when it is given: one entry per
broker 2..N (or per broker 1..N, the first then being ``listeners`` itself), an entry being
the broker's listeners joined by ``|`` (``PLAINTEXT://127.0.0.1:9093|SASL_SSL://:9193``; a
listener left out listens on port 0 of broker 1's host); without it each listener of broker 1
is repeated on port 0 (a free port). ``cluster.advertised.listeners`` is the same for what they
advertise (a listener left out advertises what it is bound to). ``cluster.racks`` lists one
rack per broker 1..N (an empty entry: no rack)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .listeners import Listener, parse_listener
from .model import ConfigError


@dataclass(frozen=True, slots=True)
class BrokerSpec:
    node_id: int
    listeners: tuple[Listener, ...]
    advertised: tuple[Listener, ...]
    rack: str | None


def _entries(key: str, values: list[str] | None, brokers: int, first: str | None
             ) -> list[str | None]:
    """One entry (or None) per broker 2..N."""
    if not values:
        return [None] * (brokers - 1)
    if len(values) == brokers and brokers > 1:
        if first is not None and values[0].strip() != first:
            raise ConfigError(key, ",".join(values),
                              f"the first of {brokers} entries is broker 1's and must be "
                              f"'{first}' (or give the {brokers - 1} entries of brokers 2.."
                              f"{brokers} only)")
        values = values[1:]
    if len(values) != brokers - 1:
        raise ConfigError(key, ",".join(values),
                          f"expected one entry per broker 2..{brokers} ({brokers - 1}), "
                          f"got {len(values)}")
    return list(values)


def _broker_listeners(key: str, entry: str | None, template: list[Listener],
                      bound_default: bool) -> tuple[Listener, ...]:
    by_name = {listener.name: listener for listener in template}
    given: dict[str, Listener] = {}
    for part in (entry or "").split("|"):
        if not part.strip():
            continue
        parsed = parse_listener(key, part)
        if parsed.name not in by_name:
            raise ConfigError(key, entry, f"listener {parsed.name} is not one of broker 1's "
                              f"listeners ({', '.join(by_name)})")
        given[parsed.name] = replace(by_name[parsed.name], host=parsed.host, port=parsed.port)
    return tuple(given.get(listener.name, replace(listener, port=0) if bound_default
                           else listener) for listener in template)


def broker_specs(config: Any) -> list[BrokerSpec]:
    """Every broker of the cluster, broker 1 first (just it with ``cluster.brokers`` 1)."""
    count: int = config["cluster.brokers"]
    node_id: int = config["node.id"]
    listeners = config.listeners
    advertised = config.advertised_listeners
    racks: list[str] | None = config["cluster.racks"]
    rack_of: list[str | None] = [config["broker.rack"]] + [None] * (count - 1)
    if racks:
        if len(racks) != count:
            raise ConfigError("cluster.racks", ",".join(racks),
                              f"expected one rack per broker 1..{count}, got {len(racks)}")
        rack_of = [rack.strip() or None for rack in racks]
        if config["broker.rack"] is not None and rack_of[0] != config["broker.rack"]:
            raise ConfigError("cluster.racks", ",".join(racks),
                              f"broker 1's rack is broker.rack ({config['broker.rack']})")
    specs = [BrokerSpec(node_id, tuple(listeners), tuple(advertised), rack_of[0])]
    first = "|".join(f"{item.name}://{item.host}:{item.port}" for item in listeners)
    bound = _entries("cluster.listeners", config["cluster.listeners"], count, first)
    shown = _entries("cluster.advertised.listeners", config["cluster.advertised.listeners"],
                     count, None)
    for i in range(1, count):
        own = _broker_listeners("cluster.listeners", bound[i - 1], listeners, True)
        ports = [item.port for item in own if item.port != 0]
        if len(set(ports)) != len(ports):
            raise ConfigError("cluster.listeners", bound[i - 1],
                              "Each listener must have a different port")
        ads = _broker_listeners("cluster.advertised.listeners", shown[i - 1], list(own), False)
        specs.append(BrokerSpec(node_id + i, own, ads, rack_of[i]))
    return specs
