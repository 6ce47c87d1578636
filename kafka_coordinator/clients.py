"""What the clients of a test pushed (KIP-714 client telemetry), and waits and assertions on
it. The server asks every client for the metrics its subscriptions name (the ``test`` profile:
the consumer's coordinator, fetch and poll metrics, every second) and serves the latest of
each from its control endpoint, ``GET /clients[?group=G]``::

    clients = ClientMetrics(coordinator.control)                 # or coordinator.clients
    client = clients.wait_for_metric(
        "org.apache.kafka.consumer.coordinator.assigned.partitions",
        lambda value: value == 3, group="orders", timeout=10)
    assert client["member_id"] in members
    clients.assert_assignments_reported(coordinator.timeline("orders").events, within_s=2)

Each client is a dict: ``client_instance_id``, ``client_id``, ``client_software_name`` and
``_version``, ``client_source_address`` and ``_port``, ``group_id`` and ``member_id`` (when the
server knows its membership), ``subscription_id``, ``requested_metrics``,
``push_interval_ms``, ``pushes``, ``terminating``, ``last_push_ms``, ``last_error`` and
``metrics`` (OTLP metric name -> latest value; a monotonic sum as its total). Only the
standard library is used.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .control import ControlClient

Client = dict[str, Any]
CLOCK_SLACK_MS = 50
"""How far a client's clock may be behind the server's (they share the host in a test)."""


class ClientMetricsError(AssertionError):
    """A wait or an assertion on client metrics failed."""


class ClientMetrics:
    def __init__(self, control: ControlClient | str) -> None:
        self.control = ControlClient(control) if isinstance(control, str) else control

    def clients(self, group: str | None = None) -> list[Client]:
        """The clients whose telemetry the server keeps (of ``group``'s members, if given)."""
        query = {} if group is None else {"group": group}
        return list(self.control.get("/clients", query)["clients"])

    def metric(self, client: Client, name: str) -> float | None:
        return client["metrics"].get(name)

    def wait_for_metric(self, name: str, predicate: Callable[[float], bool] = lambda _: True,
                        *, group: str | None = None, member: str | None = None,
                        client_id: str | None = None, timeout: float = 10.0,
                        poll: float = 0.1) -> Client:
        """The first client (of ``group`` / ``member`` / ``client_id``) whose latest ``name``
        satisfies ``predicate``, within ``timeout`` seconds; ClientMetricsError otherwise,
        with what the clients reported."""
        deadline = time.monotonic() + timeout
        seen: list[Client] = []
        while True:
            seen = self.clients(group)
            for client in seen:
                if member is not None and client.get("member_id") != member:
                    continue
                if client_id is not None and client.get("client_id") != client_id:
                    continue
                value = self.metric(client, name)
                if value is not None and predicate(value):
                    return client
            if time.monotonic() >= deadline:
                reported = {c["client_instance_id"]: c["metrics"].get(name) for c in seen}
                raise ClientMetricsError(f"no client reported {name} as wanted within "
                                         f"{timeout} s; reported: {reported}")
            time.sleep(poll)

    def wait_for_members(self, group: str, members: int, name: str,
                         predicate: Callable[[float], bool] = lambda _: True, *,
                         timeout: float = 10.0, poll: float = 0.1) -> list[Client]:
        """``members`` clients of ``group``, each known by its member id, whose ``name``
        satisfies ``predicate`` (e.g. every member reported its assignment)."""
        deadline = time.monotonic() + timeout
        while True:
            ready = [c for c in self.clients(group) if c.get("member_id")
                     and (v := self.metric(c, name)) is not None and predicate(v)]
            if len(ready) >= members:
                return ready
            if time.monotonic() >= deadline:
                raise ClientMetricsError(f"{len(ready)} of {members} members of {group} "
                                         f"reported {name} as wanted within {timeout} s")
            time.sleep(poll)

    def assert_assignments_reported(self, events: Iterable[Mapping[str, Any]],
                                    within_s: float = 2.0) -> None:
        """Each member's latest assignment in ``events`` (a group's timeline,
        ``Timeline.events``: the coordinator's ``assigned`` / ``revoked`` events and the
        clients' ``client-assigned-partitions``) was reported by the member's client, with
        the number of partitions the coordinator gave it, at most ``within_s`` seconds after
        the coordinator's event (client time; push intervals bound how soon it can)."""
        owned: dict[str, tuple[int, set[tuple[str, int]]]] = {}
        reports: dict[str, list[Mapping[str, Any]]] = {}
        for event in sorted(events, key=lambda e: e["timestamp"]):
            member = event.get("member")
            if member is None:
                continue
            held = owned.setdefault(member, (0, set()))[1]
            changed = {(t, p) for t, ps in event.get("partitions", {}).items() for p in ps} \
                if isinstance(event.get("partitions"), dict) else set()
            if event["kind"] == "assigned":
                owned[member] = (event["timestamp"], held | changed)
            elif event["kind"] == "revoked":
                owned[member] = (event["timestamp"], held - changed)
            elif event["kind"] == "client-assigned-partitions":
                reports.setdefault(member, []).append(event)
        late = []
        for member, (at, held) in owned.items():
            if not at:
                continue
            ok = any(r["partitions"] == len(held) and
                     0 <= r["timestamp"] - at + CLOCK_SLACK_MS <= within_s * 1000 + CLOCK_SLACK_MS
                     for r in reports.get(member, ()))
            if not ok:
                late.append((member, len(held), [(r["timestamp"] - at, r["partitions"])
                                                 for r in reports.get(member, ())]))
        if late:
            raise ClientMetricsError(
                f"members whose client did not report its assignment within {within_s} s "
                f"(member, partitions, [(ms after the coordinator, reported)]): {late}")

    def wait_until_gone(self, client_instance_id: str, timeout: float = 30.0,
                        poll: float = 0.2) -> None:
        """The server forgot the client (its staleness window passed after its last push)."""
        deadline = time.monotonic() + timeout
        while any(c["client_instance_id"] == client_instance_id for c in self.clients()):
            if time.monotonic() >= deadline:
                raise ClientMetricsError(f"client {client_instance_id} still kept after "
                                         f"{timeout} s")
            time.sleep(poll)
