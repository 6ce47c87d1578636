"""A client-side assignor written in Python, driving a real consumer group (the KIP-848
draft's client-side assignors, seed 003; the server needs
``group.consumer.client.assignors.enable=true``).

``ClientAssignor(bootstrap_servers, group_id, assign)`` joins the group as a member of its own
(a consumer-protocol member subscribed to no topics, so it owns no partitions), listing one
client-side assignor (``name``). The coordinator picks it to compute each new target of the
group; then it calls ``assign(state)`` with the group state (``GroupState``: every member with
its client id, subscribed topics and current target, the topics with their partition counts)
and installs what it returns, ``{member id: {topic name: [partitions]}}``. The other members
are unchanged clients (confluent-kafka with ``group.protocol=consumer``, the Java consumer,
...): they get the targets it computed through their ordinary heartbeats, revoking before
others are given what they had, as with a server-side assignor.

    def assign(state):
        a = [m.member_id for m in state.members if m.client_id.endswith("-a")]
        return {a[i % len(a)]: {"orders": [p]} for i, p in
                enumerate(range(state.topics["orders"]))}

    with ClientAssignor(bootstrap_servers, "billing", assign) as assignor:
        ...  # consumers of group "billing" are assigned by ``assign``

It heartbeats on a thread of its own, at the interval the coordinator gives. An exception from
``assign`` is kept in ``errors`` and nothing is installed: after the member's rebalance timeout
the coordinator asks another member, or computes the target with its server-side assignor.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType

from coordinator.testing.client_assignor_member import (
    Assignment,
    AssignorMember,
    GroupState,
    MemberState,
)

__all__ = ["Assignment", "ClientAssignor", "GroupState", "MemberState"]


class ClientAssignor:
    def __init__(self, bootstrap_servers: str, group_id: str,
                 assign: Callable[[GroupState], Assignment], *, name: str = "python",
                 version: int = 0, client_id: str = "client-assignor",
                 topics: Sequence[str] = (), rebalance_timeout_ms: int = 30000) -> None:
        """``name`` and ``version``: the client-side assignor it lists (the member listing the
        highest version computes); ``rebalance_timeout_ms``: how long the coordinator waits for
        its assignment before it asks another member."""
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id
        self.assign = assign
        self.name = name
        self.version = version
        self.client_id = client_id
        self.topics = tuple(topics)
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.errors: list[BaseException] = []
        """What ``assign`` or the connection raised, oldest first."""
        self.states: list[GroupState] = []
        """The group states ``assign`` was called with."""
        self._member: AssignorMember | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._installed: list[int] = []

    @property
    def member_id(self) -> str | None:
        return None if self._member is None else self._member.member_id

    @property
    def installed(self) -> list[int]:
        """The group epochs of the targets it installed."""
        return list(self._installed)

    def _compute(self, state: GroupState) -> Assignment:
        self.states.append(state)
        return self.assign(state)

    def _connect(self) -> AssignorMember:
        member = AssignorMember(self.bootstrap_servers, self.group_id, self.name, self._compute,
                                version=self.version, client_id=self.client_id, topics=self.topics,
                                rebalance_timeout_ms=self.rebalance_timeout_ms)
        member.installed = self._installed
        return member

    def start(self) -> ClientAssignor:
        self._member = self._connect()
        self._member.poll()  # joined before start returns
        self._thread = threading.Thread(target=self._run, name=f"client-assignor-{self.name}",
                                        daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s()):
            try:
                if self._member is None:
                    self._member = self._connect()
                self._member.poll()
            except ConnectionError as exc:
                self.errors.append(exc)
                if self._member is not None:
                    self._member.close()
                self._member = None
            except Exception as exc:  # assign raised, or the coordinator refused it
                self.errors.append(exc)

    def _interval_s(self) -> float:
        member = self._member
        return 0.5 if member is None else max(0.02, member.heartbeat_interval_ms / 1000.0)

    def wait_installed(self, count: int = 1, timeout_s: float = 15.0) -> list[int]:
        """The installed epochs once there are ``count``; TimeoutError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while len(self._installed) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(self._installed)} of {count} assignments installed; "
                                   f"errors: {self.errors!r}")
            time.sleep(0.02)
        return self.installed

    def stop(self) -> None:
        """Leave the group and stop."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        member, self._member = self._member, None
        if member is not None:
            try:
                member.leave()
            except (ConnectionError, OSError):
                pass
            member.close()

    def __enter__(self) -> ClientAssignor:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
