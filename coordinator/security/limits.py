"""Connection limits, as Kafka's ``ConnectionQuotas``.

- ``max.connections`` (the broker) and ``listener.name.<listener>.max.connections`` (one
  listener): while either is reached the listener accepts nothing more; new connections wait
  (in the accept backlog) until one closes.
- ``max.connections.per.ip`` with ``max.connections.per.ip.overrides`` (``host:count,...``):
  a connection over its address's limit is accepted and closed at once ("Rejected connection
  from ..."), the others go on.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping

from coordinator.config import ConfigError, ServerConfig


class TooManyConnections(Exception):
    def __init__(self, address: str, count: int) -> None:
        super().__init__(f"Rejected connection from {address}, address already has the "
                         f"configured maximum of {count} connections.")
        self.address = address
        self.count = count


def parse_overrides(text: str) -> dict[str, int]:
    """``host:count,...`` -> {ip address: count}; host names are resolved once, as Kafka does."""
    key = "max.connections.per.ip.overrides"
    overrides: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host:
            raise ConfigError(key, text, f"Map entry '{item}' is not of the form host:count")
        if not count.strip().isascii() or not count.strip().isdigit():  # no "-5", no "1_0"
            raise ConfigError(key, text, f"Invalid connection count {count} for {host}")
        limit = int(count)
        try:
            address = socket.gethostbyname(host.strip("[]"))
        except OSError:
            address = host.strip("[]")  # an IPv6 address, or a name that does not resolve
        overrides[address] = limit
    return overrides


class ConnectionQuotas:
    def __init__(self, max_connections: int, per_ip: int, per_ip_overrides: Mapping[str, int],
                 per_listener: Mapping[str, int]) -> None:
        self.max_connections = max_connections
        self.per_ip = per_ip
        self.per_ip_overrides = dict(per_ip_overrides)
        self.per_listener = dict(per_listener)
        self.total = 0
        self._by_address: dict[str, int] = {}
        self._by_listener: dict[str, int] = {}
        self._waiters: list[asyncio.Future[None]] = []

    @classmethod
    def from_config(cls, config: ServerConfig, listeners: list[str]) -> ConnectionQuotas:
        return cls(config["max.connections"], config["max.connections.per.ip"],
                   parse_overrides(config["max.connections.per.ip.overrides"]),
                   {name: config.for_listener(name, "max.connections") for name in listeners})

    def count(self, address: str) -> int:
        return self._by_address.get(address, 0)

    def _slot_available(self, listener: str) -> bool:
        return (self._by_listener.get(listener, 0) < self.per_listener.get(listener, 2**31 - 1)
                and self.total < self.max_connections)

    async def wait_for_slot(self, listener: str) -> None:
        """Return once the listener and the broker are both under their limits."""
        while not self._slot_available(listener):
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def inc(self, listener: str, address: str) -> None:
        """Count a new connection, or raise ``TooManyConnections`` (counting nothing) when its
        address is at its limit."""
        count = self._by_address.get(address, 0)
        limit = self.per_ip_overrides.get(address, self.per_ip)
        if count >= limit:
            raise TooManyConnections(address, limit)
        self._by_address[address] = count + 1
        self._by_listener[listener] = self._by_listener.get(listener, 0) + 1
        self.total += 1

    def dec(self, listener: str, address: str) -> None:
        count = self._by_address.get(address, 0)
        if count <= 1:
            self._by_address.pop(address, None)
        else:
            self._by_address[address] = count - 1
        self._by_listener[listener] = max(0, self._by_listener.get(listener, 0) - 1)
        self.total = max(0, self.total - 1)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
