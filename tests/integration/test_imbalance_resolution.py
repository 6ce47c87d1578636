"""Deferred (seed 004, Design II) and incremental (Design III) resolution of imbalance with real,
unchanged confluent-kafka ``group.protocol=consumer`` consumers, each in its own process,
checked with the clients' own rebalance callbacks and the rebalance timeline."""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from kafka_coordinator.timeline import Timeline, assert_no_partition_owned_twice
from tests.harness import ServerProcess, wait_until
from tests.integration.test_consumer_protocol import Group, create_topic, settled

SHORT_DELAY_MS = 5_000
"""The held partitions' delay where a test waits it out."""
HELD_MS = 60_000
"""The delay of the tests that bring a new member within it and never wait for it to pass: the
new member comes after a restart or a new consumer process has started, which takes seconds on
a loaded machine, so a delay of 10 s could pass before it."""
BASE = {
    "control.listener": "http://127.0.0.1:0",
    "group.consumer.session.timeout.ms": "3000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "100",
}


@contextmanager
def _deferred(tmp_path: Path, delay_ms: int) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path / "data", {
            **BASE, "group.consumer.assignment.interval.ms": "0",
            "group.consumer.scheduled.rebalance.max.delay.ms": str(delay_ms)}) as process:
        yield process


@pytest.fixture
def short_deferred_server(tmp_path: Path) -> Iterator[ServerProcess]:
    with _deferred(tmp_path, SHORT_DELAY_MS) as process:
        yield process


@pytest.fixture
def holding_server(tmp_path: Path) -> Iterator[ServerProcess]:
    with _deferred(tmp_path, HELD_MS) as process:
        yield process


@pytest.fixture
def incremental_server(tmp_path: Path) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path / "data", {
            **BASE, "group.consumer.assignment.interval.ms": "1000"}) as process:
        yield process


def events(server: ServerProcess, group: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in Timeline.fetch(server.control_url, group).events if e["kind"] == kind]


def parts(event: dict[str, Any]) -> set[tuple[str, int]]:
    return {(topic, p) for topic, ps in event["partitions"].items() for p in ps}


def callbacks_after(group: Group, since: float, name: str) -> list[tuple[str, Any]]:
    with group.lock:
        return [(kind, tps) for t, who, kind, tps in group.events
                if t > since and who == name and tps and kind in ("assign", "revoke", "lost")]


@dataclass
class Killed:
    group: Group
    before: dict[str, set[tuple[str, int]]]
    """Who owned what before the kill."""
    killed_at: float
    held: dict[str, Any]
    """The timeline's ``held`` event."""


@contextmanager
def one_of_three_killed(server: ServerProcess, topic: str) -> Iterator[Killed]:
    """Three members settle over 6 partitions; the third is killed and its session expires
    (its partitions held: the timeline and ``GET /groups/<group>/held`` say so)."""
    create_topic(server.bootstrap, topic, 6)
    group = Group(server.bootstrap, topic, [topic])
    try:
        for _ in range(3):
            group.add()
        wait_until(lambda: settled(group, {(topic, p) for p in range(6)}, 3), 30,
                   message="three members balanced")
        before = group.ownership()
        victim = group.members["m3"]
        victim.kill()
        killed_at = time.monotonic()
        group.mark_killed(victim)
        held = wait_until(lambda: events(server, topic, "held"), 20,
                          message="the killed member's partitions to be held")
        assert len(held) == 1 and parts(held[0]) == before["m3"]
        assert held[0]["reason"] == "session-expired"
        shown = held_now(server, topic)
        assert [(h["member"], h["deadline_ms"], h["reason"]) for h in shown] == [
            (held[0]["member"], held[0]["deadline_ms"], "session-expired")]
        assert {(topic, p) for p in shown[0]["partitions"][topic]} == before["m3"]
        yield Killed(group, before, killed_at, held[0])
    finally:
        group.stop_all()


def until(held: dict[str, Any]) -> float:
    """Seconds left until the held partitions' deadline (what a new member must come before)."""
    return max(0.0, held["deadline_ms"] / 1000 - time.time())


@pytest.mark.slow
def test_a_new_process_within_the_delay_gets_only_the_dead_members_partitions(
        holding_server: ServerProcess) -> None:
    with one_of_three_killed(holding_server, "pods") as killed:
        group, before, killed_at, held = (killed.group, killed.before, killed.killed_at,
                                          killed.held)
        assert time.time() * 1000 < held["deadline_ms"] - 2000
        group.add()  # the pod restarted: a new process, a new member id
        wait_until(lambda: group.ownership().get("m4") == before["m3"], until(held),
                   message="the new member to own the dead member's partitions")
        assert time.time() * 1000 < held["deadline_ms"]
        assert {m: group.ownership()[m] for m in ("m1", "m2")} == \
            {m: before[m] for m in ("m1", "m2")}
        for survivor in ("m1", "m2"):  # nothing of theirs moved, nothing new came
            assert callbacks_after(group, killed_at, survivor) == []
        released = events(holding_server, "pods", "released")
        assert [(parts(e), e["reason"]) for e in released] == [(before["m3"], "taken")]
        group.check_never_doubled(holding_server.log_dir)
        assert_no_partition_owned_twice(Timeline.fetch(holding_server.control_url,
                                                       "pods").events)


def held_now(server: ServerProcess, group: str) -> list[dict[str, Any]]:
    """``GET /groups/<group>/held`` (nothing while the group's partition loads)."""
    try:
        with urllib.request.urlopen(f"{server.control_url}/groups/{group}/held") as answer:
            held: list[dict[str, Any]] = json.load(answer)["held"]
    except urllib.error.HTTPError as exc:
        if exc.code == 503:
            return []
        raise
    return held


@pytest.mark.slow
def test_held_partitions_survive_a_coordinator_restart(holding_server: ServerProcess) -> None:
    with one_of_three_killed(holding_server, "bounce") as killed:
        shown = held_now(holding_server, "bounce")
        holding_server.restart().wait_loaded()
        assert wait_until(lambda: held_now(holding_server, "bounce"), 20,
                          message="the group's partition to load") == shown
        killed.group.add()
        wait_until(lambda: killed.group.ownership().get("m4") == killed.before["m3"],
                   until(killed.held),
                   message="the new member to own the dead member's partitions")
        assert time.time() * 1000 < killed.held["deadline_ms"]
        assert held_now(holding_server, "bounce") == []
        killed.group.check_never_doubled(holding_server.log_dir)


@pytest.mark.slow
def test_without_a_new_process_the_partitions_are_spread_after_the_delay_not_before(
        short_deferred_server: ServerProcess) -> None:
    deferred_server = short_deferred_server
    with one_of_three_killed(deferred_server, "gone") as killed:
        group, before, held = killed.group, killed.before, killed.held
        survivors = before["m1"] | before["m2"]
        deadline_s = held["deadline_ms"] / 1000
        while time.time() < deadline_s - 0.5:  # held until the deadline
            owned = group.ownership()
            assert owned["m1"] | owned["m2"] == survivors
            time.sleep(0.1)
        wait_until(lambda: settled(group, {("gone", p) for p in range(6)}, 2), 20,
                   message="the held partitions spread over the two others")
        timeline = Timeline.fetch(deferred_server.control_url, "gone")
        released = [e for e in timeline.events if e["kind"] == "released"]
        assert [(parts(e), e["reason"]) for e in released] == [(before["m3"], "expired")]
        assert released[0]["timestamp"] >= held["deadline_ms"]
        late = [e for e in timeline.events if e["kind"] == "assigned"
                and parts(e) & before["m3"] and e["timestamp"] > held["timestamp"]]
        assert late and all(e["timestamp"] >= held["deadline_ms"] for e in late)
        group.check_never_doubled(deferred_server.log_dir)
        assert_no_partition_owned_twice(timeline.events)


@pytest.mark.slow
def test_a_scale_up_from_4_to_8_moves_at_most_8_partitions_per_target(
        incremental_server: ServerProcess) -> None:
    create_topic(incremental_server.bootstrap, "wide", 64)
    partitions = {("wide", p) for p in range(64)}
    admin = KafkaAdminClient(bootstrap_servers=incremental_server.bootstrap,
                             request_timeout_ms=10000)
    try:  # the group's own config (IncrementalAlterConfigs on the GROUP resource)
        wait_until(lambda: admin.alter_configs([ConfigResource(
            ConfigResourceType.GROUP, "wide", configs={"consumer.assignment.max.moves": "8"})])
            == {"group": {"wide": "OK"}}, 30, message="the group config to be set")
    finally:
        admin.close()
    group = Group(incremental_server.bootstrap, "wide", ["wide"])
    try:
        for _ in range(4):
            group.add()
        wait_until(lambda: settled(group, partitions, 4), 60, message="four members balanced")
        started_ms = time.time() * 1000
        for _ in range(4):
            group.add()
        wait_until(lambda: settled(group, partitions, 8), 90, message="eight members balanced")
        assert {len(owned) for owned in group.ownership().values()} == {8}
        timeline = Timeline.fetch(incremental_server.control_url, "wide")
        rounds = [e for e in timeline.events if e["kind"] == "round"]
        assert rounds and all(e["moved"] <= 8 for e in rounds)
        assert all(e["moved"] == 8 for e in rounds if e["deferred"] > 0)
        targets = [e for e in timeline.events if e["kind"] == "target-computed"]
        assert all(e["moved"] <= 8 for e in targets[1:])  # the first gave m1 all 64
        scale_up = [e for e in rounds if e["timestamp"] >= started_ms]
        moved = sum(e["moved"] for e in scale_up)
        assert moved >= 32  # half of each old member's 16
        assert len(scale_up) == math.ceil(moved / 8)
        group.check_never_doubled(incremental_server.log_dir)
        assert_no_partition_owned_twice(timeline.events)
    finally:
        group.stop_all()
