"""Connection limits as Kafka's ``ConnectionQuotas``: over ``max.connections.per.ip`` (or its
override) the new connection is closed at once and the others go on; at ``max.connections``
the listener stops accepting and the next connection is served once another closes."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol import ErrorCode
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, api_versions_v0


def served(client: WireClient) -> bool:
    return client.request(api_versions_v0()).error_code == ErrorCode.none


@pytest.fixture
def clients() -> Iterator[list[WireClient]]:
    opened: list[WireClient] = []
    yield opened
    for client in opened:
        client.close()


@pytest.mark.parametrize("overrides", [
    {"max.connections.per.ip": "3"},
    {"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:3"},
], ids=["per-ip", "override"])
@pytest.mark.slow
def test_the_connection_over_the_per_ip_limit_is_closed(
        tmp_path: Path, clients: list[WireClient], overrides: dict[str, str]) -> None:
    with ServerProcess(tmp_path / "data", overrides) as server:
        clients += [WireClient(server.bootstrap) for _ in range(3)]
        assert all(served(client) for client in clients)
        extra = WireClient(server.bootstrap)
        clients.append(extra)
        assert extra.is_closed()
        server.wait_event("rejected connection", address="127.0.0.1")
        rejected = server.event("rejected connection")
        assert rejected is not None
        assert "configured maximum of 3 connections" in rejected["reason"]
        assert all(served(client) for client in clients[:3])
        clients[0].close()  # a slot frees up
        wait_until(lambda: server.count("connection closed") >= 1)
        replacement = WireClient(server.bootstrap)
        clients.append(replacement)
        assert served(replacement)


@pytest.mark.slow
def test_at_max_connections_the_next_connection_waits_for_a_slot(
        tmp_path: Path, clients: list[WireClient]) -> None:
    with ServerProcess(tmp_path / "data", {"max.connections": "2"}) as server:
        clients += [WireClient(server.bootstrap) for _ in range(2)]
        assert all(served(client) for client in clients)
        waiting = WireClient(server.bootstrap, timeout=10)  # in the accept backlog
        clients.append(waiting)
        waiting.send(api_versions_v0())
        waiting.sock.settimeout(0.5)
        with pytest.raises(socket.timeout):
            waiting.sock.recv(1)
        assert served(clients[1])  # the others keep working
        clients[0].close()
        waiting.sock.settimeout(10)
        _, answer = waiting.recv(18, 0)
        assert answer.error_code == ErrorCode.none
