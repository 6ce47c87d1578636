"""KIP-848 static membership (``group.instance.id``) with real confluent-kafka
``group.protocol=consumer`` consumers in child processes (the ``Group`` / ``Member`` helpers of
``test_consumer_protocol``: every assign / revoke / lost callback with a monotonic timestamp).

* A static member that stops and is restarted with the same instance id within the session
  timeout gets exactly its partitions back, and the other members see no callback at all.
  librdkafka's ``close()`` of a static member sends the leave heartbeat with epoch -2 (the
  coordinator keeps the member and its partitions); the restarted instance replaces it.
* A static member SIGKILLed (no leave heartbeat) still holds its instance id until its session
  times out: a new instance with that id is refused with UNRELEASED_INSTANCE_ID (fatal in
  librdkafka), exactly as Kafka's ``throwIfInstanceIdIsUnreleased`` does, and the others keep
  their partitions. Past the session timeout its partitions move to the others, and the instance
  id can join again as a new member.
* A static member that left with epoch -2 and does not come back loses its partitions after the
  session timeout, not when it leaves.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from tests.harness import ServerProcess, wait_until
from tests.integration.test_consumer_protocol import (
    OVERRIDES,
    Group,
    Member,
    create_topic,
    settled,
)

SESSION_S = 6.0  # group.consumer.session.timeout.ms of OVERRIDES
HEARTBEAT_S = 0.5
PARTITIONS = 6

TopicPartition = tuple[str, int]

# A static member that reports whether it was assigned partitions or failed fatally, then exits
# without closing (a fatal consumer must not send anything more).
ATTEMPT = r"""
import json, os, sys, time
from confluent_kafka import Consumer, KafkaError
bootstrap, group, topic, instance = sys.argv[1:5]
print("ready", flush=True)
if sys.stdin.readline().strip() != "go":  # started (Python, the client imported) before it
    sys.exit(0)
def report(**fields):
    print(json.dumps(fields), flush=True)
    os._exit(0)
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
              "group.instance.id": instance, "enable.auto.commit": False, "log_level": 0})
c.subscribe([topic], on_assign=lambda c, ps: ps and report(
    assigned=sorted([p.topic, p.partition] for p in ps)))
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    msg = c.poll(0.1)
    error = msg.error() if msg is not None else None
    if error is not None and (error.fatal() or error.code() == KafkaError._FATAL):
        report(fatal=error.str())
report(timeout=True)
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    assert float(OVERRIDES["group.consumer.session.timeout.ms"]) / 1000 == SESSION_S
    with ServerProcess(tmp_path / "data", OVERRIDES) as process:
        yield process


def _static_group(server: ServerProcess, name: str
                  ) -> tuple[Group, set[TopicPartition], list[Member]]:
    create_topic(server.bootstrap, name, PARTITIONS)
    partitions = {(name, p) for p in range(PARTITIONS)}
    group = Group(server.bootstrap, name, [name])
    members = [group.add(instance_id=f"{name}-{i}") for i in range(3)]
    wait_until(lambda: settled(group, partitions, 3), 30, interval=0.05,
               message="three static members balanced")
    return group, partitions, members


def _callbacks(group: Group, names: list[str], since: float) -> list[Any]:
    """Every assign / revoke / lost callback of ``names`` at or after ``since``."""
    with group.lock:
        return [event for event in group.events if event[1] in names and event[0] >= since
                and event[2] in ("assign", "revoke", "lost")]


def _described(server: ServerProcess, group_id: str) -> dict[str | None, tuple[str, set[Any]]]:
    """instance id -> (member id, assigned partitions), as DescribeConsumerGroups reports it."""
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    described = admin.describe_consumer_groups([group_id])[group_id].result(10)
    return {m.group_instance_id: (m.member_id, {(tp.topic, tp.partition)
                                                for tp in m.assignment.topic_partitions})
            for m in described.members}


def _server_saw(server: ServerProcess, event: str, **fields: Any) -> bool:
    return server.event(event, **fields) is not None


@pytest.mark.slow
def test_static_member_restarted_within_the_session_timeout_gets_its_partitions_back(
        server: ServerProcess) -> None:
    group, partitions, members = _static_group(server, "comeback")
    try:
        victim, others = members[1], [members[0], members[2]]
        before = group.ownership()
        old_id, _ = _described(server, "comeback")["comeback-1"]
        mark = time.monotonic()
        victim.stop()  # close(): a static member leaves with epoch -2
        stopped_at = time.monotonic()
        wait_until(lambda: _server_saw(server, "static member leaves the consumer group "
                                       "temporarily", group_id="comeback", member_id=old_id),
                   10, message="the epoch -2 leave heartbeat")
        restarted = group.add(instance_id="comeback-1")
        wait_until(lambda: group.ownership().get(restarted.name) == before[victim.name], 30,
                   interval=0.05, message="the restarted static member to own its partitions")
        back_after = time.monotonic() - stopped_at
        assert back_after < SESSION_S, f"came back after {back_after:.1f}s, past the timeout"
        # the partitions were never anybody else's, and nobody else saw a rebalance
        assert _callbacks(group, [m.name for m in others], mark) == []
        assert [e[2:] for e in _callbacks(group, [restarted.name], mark) if e[3]] == [
            ("assign", tuple(sorted(before[victim.name])))]
        assert group.ownership() == {**{m.name: before[m.name] for m in others},
                                     restarted.name: before[victim.name]}
        # the restarted instance replaced the old one
        replaced = server.wait_event("static member replaces its previous instance",
                                     group_id="comeback", instance_id="comeback-1",
                                     replaced=old_id)
        described = _described(server, "comeback")
        assert described["comeback-1"][0] == replaced["member_id"] != old_id
        assert {instance: parts for instance, (_, parts) in described.items()} == {
            "comeback-0": before[members[0].name], "comeback-1": before[victim.name],
            "comeback-2": before[members[2].name]}
        assert victim.closed and settled(group, partitions, 3)
        group.check_never_doubled(server.log_dir)
    finally:
        group.stop_all()


def _prepared_attempt(server: ServerProcess, group_id: str, topic: str,
                      instance: str) -> subprocess.Popen[str]:
    """A child process ready to start a static member (see :func:`_attempt`): starting Python
    and importing the client takes seconds on a loaded machine, which must not count against a
    session timeout."""
    child = subprocess.Popen([sys.executable, "-c", ATTEMPT, server.bootstrap, group_id, topic,
                              instance], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready", child.communicate(timeout=60)
    return child


def _attempt(child: subprocess.Popen[str]) -> dict[str, Any]:
    """Start the static member of a prepared child: what happened first (assigned or fatal)."""
    out, err = child.communicate("go\n", timeout=60)
    assert child.returncode == 0, err
    return dict(json.loads(out.strip().splitlines()[-1]))


@pytest.mark.slow
def test_static_member_killed_keeps_its_instance_id_until_the_session_timeout(
        server: ServerProcess) -> None:
    group, partitions, members = _static_group(server, "killed")
    try:
        victim, others = members[1], [members[0], members[2]]
        before = group.ownership()
        attempt = _prepared_attempt(server, "killed", "killed", "killed-1")
        mark = time.monotonic()
        victim.kill()  # SIGKILL: no leave heartbeat
        killed_at = time.monotonic()
        group.mark_killed(victim)
        # within the session timeout the instance id is still owned by the killed member
        outcome = _attempt(attempt)
        assert "instance ID is still used by another member" in outcome.get("fatal", ""), outcome
        assert time.monotonic() - killed_at < SESSION_S - HEARTBEAT_S, "the attempt was too late"
        assert _callbacks(group, [m.name for m in others], mark) == []
        assert group.ownership() == {m.name: before[m.name] for m in others}
        # past the session timeout its partitions move to the others, which lose nothing
        wait_until(lambda: settled(group, partitions, 2), 30, interval=0.05,
                   message="the survivors to take the killed member's partitions")
        took = time.monotonic() - killed_at
        assert took >= SESSION_S - 2 * HEARTBEAT_S, f"partitions moved after {took:.1f}s"
        assert all(kind == "assign" for _, _, kind, _ in
                   _callbacks(group, [m.name for m in others], mark))
        after = group.ownership()
        assert all(before[m.name] <= after[m.name] for m in others)
        assert set(_described(server, "killed")) == {"killed-0", "killed-2"}
        # and the instance id joins again, as a new member
        group.add(instance_id="killed-1")
        wait_until(lambda: settled(group, partitions, 3), 30, interval=0.05,
                   message="the instance id to join again")
        assert set(_described(server, "killed")) == {"killed-0", "killed-1", "killed-2"}
        group.check_never_doubled(server.log_dir)
    finally:
        group.stop_all()


@pytest.mark.slow
def test_static_member_left_and_not_back_loses_its_partitions_after_the_session_timeout(
        server: ServerProcess) -> None:
    group, partitions, members = _static_group(server, "gone")
    try:
        victim, others = members[1], [members[0], members[2]]
        before = group.ownership()
        mark = time.monotonic()
        old_id, _ = _described(server, "gone")["gone-1"]
        victim.stop()  # epoch -2: a temporary leave
        stopped_at = time.monotonic()
        wait_until(lambda: _server_saw(server, "static member leaves the consumer group "
                                       "temporarily", group_id="gone", member_id=old_id),
                   10, message="the epoch -2 leave heartbeat")
        described = _described(server, "gone")
        assert described["gone-1"] == (old_id, before[victim.name]), "dropped at the leave"
        wait_until(lambda: settled(group, partitions, 2), 30, interval=0.05,
                   message="the others to take the partitions of the member that left")
        took = time.monotonic() - stopped_at
        assert took >= SESSION_S - 2 * HEARTBEAT_S, f"partitions moved after {took:.1f}s"
        assert all(kind == "assign" for _, _, kind, _ in
                   _callbacks(group, [m.name for m in others], mark))
        assert set(_described(server, "gone")) == {"gone-0", "gone-2"}
        group.check_never_doubled(server.log_dir)
    finally:
        group.stop_all()
