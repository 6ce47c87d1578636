"""Online migration (issue 5 item 7): a live group of three confluent-kafka classic members
(cooperative-sticky) is upgraded member by member to ``group.protocol=consumer`` by restarting
each member process with the new protocol, then downgraded back the same way. Every member
process prints its assignment callbacks with a system-wide monotonic timestamp; after every
step the callbacks are replayed in time order to check no partition ever had two owners."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness import ServerProcess, wait_until

OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.migration.policy": "bidirectional",
}

CHILD = r"""
import json, select, sys, time
from confluent_kafka import Consumer
bootstrap, group, topic, protocol = sys.argv[1:5]
def emit(kind, parts):
    print(json.dumps({"event": kind, "t": time.monotonic(),
                      "partitions": [[p.topic, p.partition] for p in parts]}), flush=True)
conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "log_level": 0}
if protocol == "consumer":
    conf["group.protocol"] = "consumer"
else:
    conf.update({"group.protocol": "classic",
                 "partition.assignment.strategy": "cooperative-sticky",
                 "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
c = Consumer(conf)
def on_assign(consumer, parts):
    emit("assign", parts)
    if protocol == "classic":
        consumer.incremental_assign(parts)
def on_revoke(consumer, parts):
    emit("revoke", parts)
    if protocol == "classic":
        consumer.incremental_unassign(parts)
def on_lost(consumer, parts):
    emit("lost", parts)
    if protocol == "classic":
        consumer.incremental_unassign(parts)
c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
try:
    while True:
        c.poll(0.1)
        if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.readline():
            break
finally:
    c.close()
    emit("closed", [])
"""

Event = tuple[float, str, str, tuple[tuple[str, int], ...]]


class Member:
    def __init__(self, name: str, bootstrap: str, group: str, topic: str, protocol: str,
                 events: list[Event], lock: threading.Lock) -> None:
        self.name = name
        self.protocol = protocol
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, bootstrap, group, topic, protocol],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.owned: set[tuple[str, int]] = set()
        self._events, self._lock = events, lock
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            parts = tuple((t, p) for t, p in event["partitions"])
            with self._lock:
                self._events.append((event["t"], self.name, event["event"], parts))
                if event["event"] == "assign":
                    self.owned |= set(parts)
                elif event["event"] in ("revoke", "lost"):
                    self.owned -= set(parts)
                elif event["event"] == "closed":
                    self.owned.clear()

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class Group:
    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.events: list[Event] = []
        self.lock = threading.Lock()
        self.members: list[Member] = []

    def add(self, protocol: str) -> Member:
        member = Member(f"m{len(self.members) + 1}-{protocol}", self.bootstrap, self.group,
                        self.topic, protocol, self.events, self.lock)
        self.members.append(member)
        return member

    def live(self) -> list[Member]:
        return [m for m in self.members if m.proc.poll() is None]

    def settled(self, partitions: set[tuple[str, int]], count: int) -> bool:
        with self.lock:
            owned = [set(m.owned) for m in self.live()]
        union = [tp for parts in owned for tp in parts]
        return (len(owned) == count and all(owned) and len(union) == len(set(union))
                and set(union) == partitions)

    def check_never_doubled(self) -> None:
        with self.lock:
            events = sorted(self.events)
        owner: dict[tuple[str, int], str] = {}
        for _, name, kind, parts in events:
            for tp in parts:
                if kind == "assign":
                    assert owner.get(tp) in (None, name), f"{tp} owned by {owner[tp]} and {name}"
                    owner[tp] = name
                elif kind in ("revoke", "lost") and owner.get(tp) == name:
                    del owner[tp]
            if kind == "closed":
                for tp in [tp for tp, who in owner.items() if who == name]:
                    del owner[tp]

    def stop_all(self) -> None:
        for member in self.members:
            member.stop()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path / "data", OVERRIDES) as process:
        yield process


def group_type(bootstrap: str, group: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(10)
    for g in listed.valid:
        if g.group_id == group:
            return g.type.name
    return ""


@pytest.mark.slow
def test_rolling_upgrade_to_consumer_protocol_and_back(server: ServerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    for future in admin.create_topics([NewTopic("migrating", 6)]).values():
        future.result(10)
    partitions = {("migrating", p) for p in range(6)}
    group = Group(server.bootstrap, "rolling", "migrating")
    try:
        for _ in range(3):
            group.add("classic")
        wait_until(lambda: group.settled(partitions, 3), 60, message="three classic members")
        assert group_type(server.bootstrap, "rolling") == "CLASSIC"
        for to, back in (("consumer", "classic"), ("classic", "consumer")):
            for old in [m for m in group.live() if m.protocol == back]:
                old.stop()
                group.check_never_doubled()
                group.add(to)
                wait_until(lambda: group.settled(partitions, 3), 60,
                           message=f"three members after restarting {old.name} as {to}")
                group.check_never_doubled()
                if to == "consumer":
                    assert group_type(server.bootstrap, "rolling") == "CONSUMER"
            expected = "CONSUMER" if to == "consumer" else "CLASSIC"

            # a def, not a lambda: mypy cannot infer a lambda with a default argument
            def is_expected(e: str = expected) -> bool:
                return group_type(server.bootstrap, "rolling") == e

            wait_until(is_expected, 30, message=f"the group to be a {expected} group")
        group.check_never_doubled()
        with group.lock:
            kinds = {(name.split("-")[1], kind) for _, name, kind, _ in group.events}
        # Both protocols took partitions in the mixed phases.
        assert ("classic", "assign") in kinds and ("consumer", "assign") in kinds
        assert server.count("classic group upgraded to a consumer group") == 1
        assert server.count("classic member joined the consumer group") >= 1
        assert server.count("consumer group downgraded to a classic group") == 1
    finally:
        group.stop_all()
