"""``python -m coordinator bench rebalance``: how long real consumers wait for their partitions.

Real confluent-kafka consumers (``group.protocol=consumer``) against a server with Kafka's
default configs (``--profile serve``: offload on, a 1,000 ms assignment interval, 5,000 ms
heartbeats), each case on a new group:

* ``first_assignment_ms``: one member, from ``subscribe`` to its first partitions;
* ``ten_members_first_assignment_ms``: ten members subscribing at once to a topic of ten
  partitions, from each member's ``subscribe`` to its first partitions (the slowest member);
* ``leave_to_owned_ms``: two members sharing a topic, one closes (leaves the group): from the
  start of ``close`` until the other owns every partition.

One server per run; the medians of ``--runs`` runs are printed (and every sample).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coordinator.testing import ServerProcess

from .server_runs import add_arguments as add_run_arguments
from .server_runs import create_topic, medians, print_result

TARGETS_MS = {"first_assignment_ms": 200.0, "ten_members_first_assignment_ms": 200.0}
"""Issue 24's targets; ``leave_to_owned_ms`` must be under one heartbeat interval."""

TIMEOUT_S = 60.0
POLL_S = 0.002


class Member:
    """A confluent-kafka consumer that records when it got partitions and what it owns."""

    def __init__(self, bootstrap: str, group: str, extra: dict[str, Any] | None = None) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  "group.protocol": "consumer", "enable.auto.commit": False,
                                  **(extra or {})})
        self.owned: set[tuple[str, int]] = set()
        self.subscribed_at = 0.0
        self.first_assigned_at: float | None = None
        self.changed_at = 0.0

    def subscribe(self, topic: str) -> None:
        self.subscribed_at = time.perf_counter()
        self.consumer.subscribe([topic], on_assign=self._assign, on_revoke=self._revoke,
                                on_lost=self._revoke)

    def _assign(self, _consumer: Any, partitions: list[Any]) -> None:
        now = time.perf_counter()
        self.owned |= {(p.topic, p.partition) for p in partitions}
        if partitions and self.first_assigned_at is None:
            self.first_assigned_at = now
        self.changed_at = now

    def _revoke(self, _consumer: Any, partitions: list[Any]) -> None:
        self.owned -= {(p.topic, p.partition) for p in partitions}
        self.changed_at = time.perf_counter()

    def poll(self) -> None:
        self.consumer.poll(POLL_S)

    def close(self) -> None:
        self.consumer.close()


def poll_until(members: list[Member], condition: Callable[[], bool], what: str) -> None:
    deadline = time.perf_counter() + TIMEOUT_S
    while not condition():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        for member in members:
            member.poll()


def first_assignment_ms(bootstrap: str, topic: str, group: str) -> float:
    member = Member(bootstrap, group)
    try:
        member.subscribe(topic)
        poll_until([member], lambda: member.first_assigned_at is not None, "one member")
        assert member.first_assigned_at is not None
        return (member.first_assigned_at - member.subscribed_at) * 1000.0
    finally:
        member.close()


def ten_members_ms(bootstrap: str, topic: str, group: str, count: int = 10) -> float:
    members = [Member(bootstrap, group) for _ in range(count)]
    try:
        for member in members:
            member.subscribe(topic)
        poll_until(members, lambda: all(m.owned for m in members), f"{count} members")
        return max(((m.first_assigned_at or 0.0) - m.subscribed_at) * 1000.0 for m in members)
    finally:
        for member in members:
            member.close()


def leave_to_owned_ms(bootstrap: str, topic: str, group: str, partitions: int) -> float:
    stays, leaves = Member(bootstrap, group), Member(bootstrap, group)
    everything = {(topic, p) for p in range(partitions)}
    try:
        stays.subscribe(topic)
        leaves.subscribe(topic)
        poll_until([stays, leaves], lambda: bool(stays.owned) and bool(leaves.owned)
                   and not stays.owned & leaves.owned
                   and stays.owned | leaves.owned == everything, "two members to share")
        began = time.perf_counter()
        leaves.close()
        poll_until([stays], lambda: stays.owned == everything, "the other member's partitions")
        return (stays.changed_at - began) * 1000.0
    finally:
        stays.close()


def run_once(profile: str, run: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-rebalance-") as tmp:
        server = ServerProcess(Path(tmp) / "data", {"metrics.listener": "http://127.0.0.1:0"},
                               profile=profile).start()
        try:
            server.wait_loaded()
            bootstrap = server.bootstrap
            create_topic(bootstrap, "one", 3)
            create_topic(bootstrap, "ten", 10)
            create_topic(bootstrap, "two", 4)
            return {
                "first_assignment_ms": first_assignment_ms(bootstrap, "one", f"one-{run}"),
                "ten_members_first_assignment_ms": ten_members_ms(bootstrap, "ten",
                                                                  f"ten-{run}"),
                "leave_to_owned_ms": leave_to_owned_ms(bootstrap, "two", f"two-{run}", 4),
            }
        finally:
            server.stop()
            server.kill()


KEYS = ("first_assignment_ms", "ten_members_first_assignment_ms", "leave_to_owned_ms")


def run_bench(profile: str, runs: int) -> dict[str, Any]:
    samples = [run_once(profile, run) for run in range(runs)]
    result = medians("rebalance", profile, samples, KEYS)
    result["targets_ms"] = TARGETS_MS
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_arguments(parser, "serve", "the server's profile (serve: Kafka's defaults)")


def run(args: argparse.Namespace) -> int:
    result = run_bench(args.profile, args.runs)
    return print_result(result, args.json, (
        f"  {key:34} {result[key]:9.1f} ms   (runs {result['samples'][key]})" for key in KEYS))
