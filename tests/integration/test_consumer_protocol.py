"""KIP-848 consumer groups with real confluent-kafka ``group.protocol=consumer`` consumers.

Each consumer runs in its own process and prints its assignment callbacks (with a system-wide
monotonic timestamp and its member id) as JSON lines; the test checks that no partition is ever
owned by two members at once, in the server's records and, as far as Kafka guarantees it, in the
callbacks replayed in time order (``Group.check_never_doubled``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

import protocol
from kafka_coordinator.timeline import Partition, Timeline, partitions_of
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, kio_class

OVERRIDES = {
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
    # these tests expect the target computed inline, in the heartbeat that makes it due
    "group.consumer.assignor.offload.enable": "false",
}

CHILD = r"""
import json, sys, time
from confluent_kafka import Consumer
bootstrap, group, topics = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
instance = sys.argv[4] if len(sys.argv) > 4 else None
def emit(kind, parts):
    print(json.dumps({"event": kind, "t": time.monotonic(), "member": c.memberid(),
                      "partitions": [[p.topic, p.partition] for p in parts]}), flush=True)
conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
        "enable.auto.commit": False, "log_level": 0}
if instance:
    conf["group.instance.id"] = instance
c = Consumer(conf)
c.subscribe(topics, on_assign=lambda c, p: emit("assign", p),
            on_revoke=lambda c, p: emit("revoke", p), on_lost=lambda c, p: emit("lost", p))
print(json.dumps({"event": "started", "t": time.monotonic(), "member": None, "partitions": []}),
      flush=True)
try:
    while True:
        c.poll(0.1)
        if sys.stdin in __import__("select").select([sys.stdin], [], [], 0)[0]:
            if not sys.stdin.readline():
                break
finally:
    c.close()
    print(json.dumps({"event": "closed", "t": time.monotonic(), "member": None, "partitions": []}),
          flush=True)
"""


class Member:
    """A consumer process and what it reported."""

    def __init__(self, name: str, bootstrap: str, group: str, topics: list[str],
                 events: list[tuple[float, str, str, tuple[tuple[str, int], ...]]],
                 lock: threading.Lock, instance_id: str | None = None) -> None:
        self.name = name
        args = [sys.executable, "-c", CHILD, bootstrap, group, ",".join(topics)]
        if instance_id:
            args.append(instance_id)
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.owned: set[tuple[str, int]] = set()
        self.member_ids: set[str] = set()
        """The member ids its callbacks reported (``Consumer.memberid()``)."""
        self.closed = False
        self._events = events
        self._lock = lock
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            parts = tuple((t, p) for t, p in event["partitions"])
            with self._lock:
                self._events.append((event["t"], self.name, event["event"], parts))
                if event.get("member"):
                    self.member_ids.add(event["member"])
                if event["event"] == "assign":
                    self.owned |= set(parts)
                elif event["event"] in ("revoke", "lost"):
                    self.owned -= set(parts)
                elif event["event"] == "closed":
                    self.closed = True

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(20)

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


class Group:
    def __init__(self, bootstrap: str, group: str, topics: list[str]) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.topics = topics
        self.events: list[tuple[float, str, str, tuple[tuple[str, int], ...]]] = []
        self.lock = threading.Lock()
        self.members: dict[str, Member] = {}
        self._count = 0

    def add(self, instance_id: str | None = None) -> Member:
        self._count += 1
        name = f"m{self._count}"
        member = Member(name, self.bootstrap, self.group, self.topics, self.events, self.lock,
                        instance_id)
        self.members[name] = member
        return member

    def live(self) -> list[Member]:
        return [m for m in self.members.values() if m.proc.poll() is None]

    def ownership(self) -> dict[str, set[tuple[str, int]]]:
        with self.lock:
            return {name: set(m.owned) for name, m in self.members.items()
                    if m.proc.poll() is None}

    def check_never_doubled(self, store: Path) -> None:
        """No partition has two owners at any instant, as far as Kafka guarantees it.

        The server's records (``store``, its ``log.dirs``) must never put a partition in two
        members' assignments at once. The callbacks, replayed in time order (one system-wide
        monotonic clock), must not either, with one exception the protocol allows: KIP-848's
        coordinator goes by the owned partitions each heartbeat reports (Kafka's
        ``CurrentAssignmentBuilder``), so a partition it assigned to a member and moved in a
        newer target before that member's heartbeat reported owning it is released at once,
        with no revocation to wait for, and given to another member; the first member's client
        (still reconciling the older assignment) may call ``on_assign`` for it, then
        ``on_revoke``, around the other member's ``on_assign``. An overlap is excused only for
        such an unacknowledged move, from that member to that member, found in the records; a
        partition a member acknowledged owning goes through a revocation its client performs
        (``on_revoke``) before the heartbeat that releases it, so it has one owner at a time
        in the callbacks too."""
        timeline = Timeline.from_store(store, self.group)
        timeline.assert_no_partition_owned_twice()
        moves = unacknowledged_moves(timeline)
        with self.lock:
            events = sorted(self.events)
            ids = {name: set(member.member_ids) for name, member in self.members.items()}

        def excused(source: str, to: str, tp: tuple[str, int]) -> bool:
            for move in moves:
                if move[0] in ids[source] and move[1] in ids[to] and move[2] == tp:
                    moves.remove(move)
                    return True
            return False

        owner: dict[tuple[str, int], str] = {}
        for _, name, kind, parts in events:
            for tp in parts:
                if kind == "assign":
                    other = owner.get(tp)
                    if other in (None, name) or excused(other, name, tp):
                        owner[tp] = name
                    else:
                        # the moved-away member's late on_assign of the withdrawn assignment
                        assert excused(name, other, tp), f"{tp} owned by {other} and {name}"
                elif kind in ("revoke", "lost") and owner.get(tp) == name:
                    del owner[tp]
            if kind in ("killed", "closed"):
                for tp in [tp for tp, who in owner.items() if who == name]:
                    del owner[tp]

    def mark_killed(self, member: Member) -> None:
        with self.lock:
            self.events.append((time.monotonic(), member.name, "killed", ()))
            member.owned.clear()

    def stop_all(self) -> None:
        for member in self.members.values():
            try:
                member.stop()
            except (subprocess.TimeoutExpired, OSError):
                member.proc.kill()


def unacknowledged_moves(timeline: Timeline) -> list[tuple[str, str, Partition]]:
    """(from member, to member, partition) for each move of a partition the server made
    without its previous member having acknowledged owning it: assigned to the first member,
    released by a heartbeat whose owned partitions did not hold it (a ``revoked`` record with no
    ``revocation-requested`` for it since it was assigned, and not a removal from the group),
    then assigned to the other member. In the order of the records."""
    requested: dict[tuple[str, Partition], bool] = {}
    released_by: dict[Partition, str] = {}
    moves: list[tuple[str, str, Partition]] = []
    for event in timeline:
        kind = event["kind"]
        if kind not in ("assigned", "revocation-requested", "revoked"):
            continue
        member: str = event["member"]
        if kind == "assigned":
            for tp in partitions_of(event):
                source = released_by.pop(tp, None)
                if source is not None and source != member:
                    moves.append((source, member, tp))
                requested[(member, tp)] = False
        elif kind == "revocation-requested":
            for tp in partitions_of(event):
                requested[(member, tp)] = True
        elif kind == "revoked":
            for tp in partitions_of(event):
                if requested.pop((member, tp), True) or event.get("removed"):
                    released_by.pop(tp, None)
                else:
                    released_by[tp] = member
    return moves


def settled(group: Group, partitions: set[tuple[str, int]], members: int) -> bool:
    """Every partition owned by exactly one of ``members`` live members, balanced within one."""
    owned = group.ownership()
    if len(owned) != members:
        return False
    counts = [len(parts) for parts in owned.values()]
    union = [tp for parts in owned.values() for tp in parts]
    return (len(union) == len(set(union)) and set(union) == partitions
            and max(counts) - min(counts) <= 1)


@pytest.fixture(scope="module")
def kip848_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for the module: each test has its own topic and group, and none restarts it
    or reads its log."""
    with ServerProcess(tmp_path_factory.mktemp("kip848") / "data", OVERRIDES) as process:
        yield process


def create_topic(bootstrap: str, name: str, partitions: int) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions)]).values():
        future.result(10)
    return admin


@pytest.mark.slow
def test_group_scales_1_5_2_with_exclusive_ownership(kip848_server: ServerProcess) -> None:
    create_topic(kip848_server.bootstrap, "orders", 12)
    partitions = {("orders", p) for p in range(12)}
    group = Group(kip848_server.bootstrap, "scale", ["orders"])
    try:
        group.add()
        wait_until(lambda: settled(group, partitions, 1), 30, message="one member owns all")
        for _ in range(4):
            group.add()
        wait_until(lambda: settled(group, partitions, 5), 45, message="five members balanced")
        group.check_never_doubled(kip848_server.log_dir)
        for member in group.live()[:3]:
            member.stop()
        wait_until(lambda: settled(group, partitions, 2), 45, message="two members balanced")
        group.check_never_doubled(kip848_server.log_dir)
        admin = AdminClient({"bootstrap.servers": kip848_server.bootstrap})
        described = admin.describe_consumer_groups(["scale"])["scale"].result(10)
        assert described.state.name == "STABLE"
        assert len(described.members) == 2
        seen = sorted((tp.topic, tp.partition) for m in described.members
                      for tp in m.assignment.topic_partitions)
        assert seen == sorted(partitions)
    finally:
        group.stop_all()


@pytest.mark.slow
def test_killed_member_loses_partitions_after_session_timeout(
        kip848_server: ServerProcess) -> None:
    create_topic(kip848_server.bootstrap, "kills", 4)
    partitions = {("kills", p) for p in range(4)}
    group = Group(kip848_server.bootstrap, "killers", ["kills"])
    try:
        survivor = group.add()
        victim = group.add()
        wait_until(lambda: settled(group, partitions, 2), 30, message="two members balanced")
        victim.kill()
        killed_at = time.monotonic()
        group.mark_killed(victim)
        wait_until(lambda: group.ownership()[survivor.name] == partitions, 30,
                   message="the survivor to take every partition")
        took = time.monotonic() - killed_at
        # Session timeout 6 s: not before it (minus the heartbeat interval), well after it.
        assert took >= 5.0, f"partitions moved after {took:.1f}s, before the session timeout"
        group.check_never_doubled(kip848_server.log_dir)
    finally:
        group.stop_all()


def test_added_partitions_are_assigned(kip848_server: ServerProcess) -> None:
    admin = create_topic(kip848_server.bootstrap, "grows", 2)
    group = Group(kip848_server.bootstrap, "growers", ["grows"])
    try:
        group.add()
        group.add()
        wait_until(lambda: settled(group, {("grows", 0), ("grows", 1)}, 2), 30,
                   message="two members, one partition each")
        for future in admin.create_partitions([NewPartitions("grows", 6)]).values():
            future.result(10)
        wait_until(lambda: settled(group, {("grows", p) for p in range(6)}, 2), 30,
                   message="the new partitions assigned")
        group.check_never_doubled(kip848_server.log_dir)
    finally:
        group.stop_all()


def _heartbeat(wire: WireClient, group: str, member: str, epoch: int, topics: Any = None,
               owned: Any = None) -> Any:
    request = kio_class("consumer_group_heartbeat", 1, "request", "ConsumerGroupHeartbeatRequest")
    return wire.request(protocol.make(
        request, group_id=group, member_id=member, member_epoch=epoch,
        rebalance_timeout=__import__("datetime").timedelta(milliseconds=30000)
        if epoch == 0 else __import__("datetime").timedelta(milliseconds=-1),
        subscribed_topic_names=topics, topic_partitions=owned))


def _wait_loaded(wire: WireClient, group: str) -> None:
    """Until the group's coordinator partition has loaded (a leave of an unknown member of an
    unknown group writes nothing)."""
    wait_until(lambda: _heartbeat(wire, group, "probe", -1).error_code
               != protocol.ErrorCode.coordinator_load_in_progress, 20,
               message="the coordinator partition to load")


def _commit(wire: WireClient, group: str, member: str, epoch: int, topic: str) -> int:
    request = kio_class("offset_commit", 9, "request", "OffsetCommitRequest")
    rtopic = kio_class("offset_commit", 9, "request", "OffsetCommitRequestTopic")
    rpart = kio_class("offset_commit", 9, "request", "OffsetCommitRequestPartition")
    response = wire.request(protocol.make(
        request, group_id=group, generation_id_or_member_epoch=epoch, member_id=member,
        topics=(protocol.make(rtopic, name=topic, partitions=(
            protocol.make(rpart, partition_index=0, committed_offset=5,
                          committed_metadata=""),)),)))
    return int(response.topics[0].partitions[0].error_code)


def test_commits_are_validated_against_the_member_epoch(kip848_server: ServerProcess) -> None:
    create_topic(kip848_server.bootstrap, "commits", 1)
    with WireClient(kip848_server.bootstrap) as wire:
        _wait_loaded(wire, "committers")
        joined = _heartbeat(wire, "committers", "member-a", 0, topics=("commits",), owned=())
        assert joined.error_code == 0 and joined.member_epoch == 2
        assert _commit(wire, "committers", "member-a", 2, "commits") == 0
        assert _commit(wire, "committers", "member-a", 1, "commits") == 113  # STALE_MEMBER_EPOCH
        assert _commit(wire, "committers", "nobody", 2, "commits") == 25  # UNKNOWN_MEMBER_ID
        left = _heartbeat(wire, "committers", "member-a", -1)
        assert left.error_code == 0 and left.member_epoch == -1
        # an empty group takes commits without an epoch (admin tools)
        assert _commit(wire, "committers", "", -1, "commits") == 0


def test_heartbeat_errors_on_the_wire(kip848_server: ServerProcess) -> None:
    create_topic(kip848_server.bootstrap, "errs", 1)
    with WireClient(kip848_server.bootstrap) as wire:
        _wait_loaded(wire, "errs")
        assert _heartbeat(wire, "errs", "", 0, topics=("errs",), owned=()).error_code == 42
        assert _heartbeat(wire, "errs", "x", 5).error_code == 69  # GROUP_ID_NOT_FOUND
        assert _heartbeat(wire, "errs", "x", 0, topics=("errs",), owned=()).error_code == 0
        assert _heartbeat(wire, "errs", "y", 3).error_code == 25  # UNKNOWN_MEMBER_ID
        assert _heartbeat(wire, "errs", "x", 7).error_code == 110  # FENCED_MEMBER_EPOCH
