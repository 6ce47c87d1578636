"""Classic groups with real clients: confluent-kafka (librdkafka 2.16) consumers in child processes
(so they can be SIGKILLed), range / roundrobin / cooperative-sticky rebalancing, static members
(KIP-345), session timeouts, offsets through consumers and both admin clients, and a restart.

Each member is a child process that prints its rebalance callbacks (assign / revoke / lost) as
JSON lines; the test rebuilds every member's owned partitions from them and waits, with a
deadline, until the partitions are split exactly among the live members.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

from tests.harness import ServerProcess, wait_until

TIMEOUT = 20.0
PARTITIONS = 6
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}

Partition = tuple[str, int]

MEMBER_SCRIPT = r"""
import json, signal, sys
from confluent_kafka import Consumer

conf, topics = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def emit(event, partitions=()):
    print(json.dumps({"event": event,
                      "partitions": sorted([p.topic, p.partition] for p in partitions)}),
          flush=True)
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
consumer = Consumer(conf)
consumer.subscribe(topics,
                   on_assign=lambda c, ps: emit("assign", ps),
                   on_revoke=lambda c, ps: emit("revoke", ps),
                   on_lost=lambda c, ps: emit("lost", ps))
emit("started")
while not stop:
    consumer.poll(0.05)
consumer.close()
emit("closed")
"""


class Member:
    """A confluent-kafka consumer in a child process."""

    def __init__(self, server: ServerProcess, group: str, topics: list[str], strategy: str,
                 instance: str | None = None, session_ms: int = 6000, name: str = "") -> None:
        self.name = name or instance or uuid.uuid4().hex[:6]
        self.conf: dict[str, Any] = {
            "bootstrap.servers": server.bootstrap, "group.id": group,
            "partition.assignment.strategy": strategy, "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": 300, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "client.id": f"member-{self.name}",
            "topic.metadata.refresh.interval.ms": 1000,
        }
        if instance is not None:
            self.conf["group.instance.id"] = instance
        self.topics = topics
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> Member:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", MEMBER_SCRIPT, json.dumps(self.conf), json.dumps(self.topics)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
        return self

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            event["partitions"] = [tuple(p) for p in event["partitions"]]
            with self._lock:
                self.events.append(event)

    # --- what it saw -------------------------------------------------------------------------
    def mark(self) -> int:
        with self._lock:
            return len(self.events)

    def since(self, mark: int, *kinds: str) -> set[Partition]:
        with self._lock:
            return {p for e in self.events[mark:] if e["event"] in kinds for p in e["partitions"]}

    def count(self, kind: str, mark: int = 0) -> int:
        with self._lock:
            return sum(1 for e in self.events[mark:] if e["event"] == kind)

    @property
    def owned(self) -> set[Partition]:
        owned: set[Partition] = set()
        with self._lock:
            for event in self.events:
                if event["event"] in ("revoke", "lost"):
                    owned -= set(event["partitions"])
                elif event["event"] == "assign":
                    owned |= set(event["partitions"])
        return owned

    # --- ending ------------------------------------------------------------------------------
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def close(self) -> None:
        """A clean close: the consumer leaves the group."""
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("classic") / "data", OVERRIDES) as process:
        try:
            yield process
        finally:
            _ADMINS.pop(process.bootstrap, None)


@pytest.fixture
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    yield started
    for member in started:
        member.kill()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


_ADMINS: dict[str, AdminClient] = {}


def admin_for(server: ServerProcess) -> AdminClient:
    """One admin client per server address, kept alive: a client dropped while a request is in
    flight purges it."""
    if server.bootstrap not in _ADMINS:
        _ADMINS[server.bootstrap] = AdminClient({"bootstrap.servers": server.bootstrap,
                                                 "socket.timeout.ms": 5000})
    return _ADMINS[server.bootstrap]


def create_topic(server: ServerProcess, partitions: int = PARTITIONS) -> str:
    name = unique("topic")
    admin = admin_for(server)
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)],
                        request_timeout=TIMEOUT)[name].result(TIMEOUT)
    return name


def all_partitions(topic: str, count: int = PARTITIONS) -> set[Partition]:
    return {(topic, p) for p in range(count)}


class Owner(Protocol):
    """What ``settle`` reads of a member (a ``Member``, or a consumer of the pure-Python
    clients' tests)."""

    @property
    def name(self) -> str: ...
    @property
    def owned(self) -> set[Partition]: ...


def split_exactly(live: Sequence[Owner], partitions: set[Partition]) -> bool:
    """Every partition owned by exactly one live member, and every live member owns some."""
    owned = [m.owned for m in live]
    return (all(owned) and sum(len(o) for o in owned) == len(partitions)
            and set().union(*owned) == partitions)


def group_state(server: ServerProcess, group: str) -> Any:
    future = admin_for(server).describe_consumer_groups([group], request_timeout=TIMEOUT)[group]
    return future.result(TIMEOUT)


def settle(server: ServerProcess, group: str, live: Sequence[Owner],
           partitions: set[Partition], timeout: float = TIMEOUT) -> dict[str, set[Partition]]:
    """Wait until the live members split the partitions and the server agrees: the group is
    Stable with exactly those members and the assignments the members report."""

    def agreed() -> bool:
        if not split_exactly(live, partitions):
            return False
        described = group_state(server, group)
        if described.state.name != "STABLE" or len(described.members) != len(live):
            return False
        server_view = sorted(sorted((tp.topic, tp.partition)
                                    for tp in m.assignment.topic_partitions)
                             for m in described.members)
        return server_view == sorted(sorted(m.owned) for m in live)

    wait_until(agreed, timeout, interval=0.1,
               message=f"{len(live)} members to split {len(partitions)} partitions")
    return {m.name: m.owned for m in live}


# --- rebalancing -----------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_three_members_join_and_leave(server: ServerProcess, members: list[Member],
                                      strategy: str) -> None:
    topic, group = create_topic(server), unique("group")
    partitions = all_partitions(topic)
    cooperative = strategy == "cooperative-sticky"
    live: list[Member] = []
    for index in range(3):
        before = {m.name: m.owned for m in live}
        marks = {m.name: m.mark() for m in live}
        member = Member(server, group, [topic], strategy, name=f"m{index}").start()
        members.append(member)
        live.append(member)
        after = settle(server, group, live, partitions)
        for old in live[:-1]:
            revoked = old.since(marks[old.name], "revoke", "lost")
            if cooperative:
                # a join revokes only what moves: nothing the member still owns afterwards
                assert revoked == before[old.name] - after[old.name], (old.name, revoked)
                assert before[old.name] - after[old.name], "nothing moved to the new member"
            else:
                assert revoked == before[old.name]  # eager: everything is revoked first
    # a member leaves cleanly: the others take its partitions
    leaving = live.pop(0)
    before = {m.name: m.owned for m in live}
    marks = {m.name: m.mark() for m in live}
    leaving.close()
    assert leaving.count("closed") == 1
    after = settle(server, group, live, partitions)
    for member in live:
        revoked = member.since(marks[member.name], "revoke", "lost")
        if cooperative:
            assert revoked == set(), "a leave revoked partitions from a member that stays"
            assert before[member.name] <= after[member.name]
        else:
            assert revoked == before[member.name]


# --- static membership (KIP-345) -------------------------------------------------------------
def test_static_member_killed_and_restarted_within_session_timeout_keeps_its_partitions(
        server: ServerProcess, members: list[Member]) -> None:
    topic, group = create_topic(server), unique("static")
    partitions = all_partitions(topic)
    live = [Member(server, group, [topic], "range", instance=f"inst-{i}", session_ms=15000)
            for i in range(3)]
    for member in live:
        members.append(member.start())
        settle(server, group, live[: live.index(member) + 1], partitions)
    before = {m.name: m.owned for m in live}
    marks = {m.name: m.mark() for m in live}
    victim = live[1]
    victim.kill()
    restarted = Member(server, group, [topic], "range", instance="inst-1", session_ms=15000)
    members.append(restarted.start())
    live[1] = restarted
    after = settle(server, group, live, partitions)
    assert after["inst-1"] == before["inst-1"]
    for other in (live[0], live[2]):
        assert other.since(marks[other.name], "revoke", "lost", "assign") == set(), (
            f"{other.name} saw a rebalance when a static member restarted")
        assert other.owned == before[other.name]


@pytest.mark.slow
def test_static_member_gone_past_its_session_timeout_loses_its_partitions(
        server: ServerProcess, members: list[Member]) -> None:
    topic, group = create_topic(server), unique("static-gone")
    partitions = all_partitions(topic)
    live = [Member(server, group, [topic], "range", instance=f"gone-{i}", session_ms=3000)
            for i in range(3)]
    for member in live:
        members.append(member.start())
    settle(server, group, live, partitions)
    victim = live.pop(1)
    lost = victim.owned
    victim.kill()
    after = settle(server, group, live, partitions)
    assert lost <= after[live[0].name] | after[live[1].name]
    described = group_state(server, group)
    assert {m.group_instance_id for m in described.members} == {"gone-0", "gone-2"}


@pytest.mark.slow
def test_dynamic_member_killed_is_removed_after_its_session_timeout(
        server: ServerProcess, members: list[Member]) -> None:
    topic, group = create_topic(server), unique("dynamic-gone")
    partitions = all_partitions(topic)
    live = [Member(server, group, [topic], "roundrobin", session_ms=3000, name=f"d{i}")
            for i in range(3)]
    for member in live:
        members.append(member.start())
    settle(server, group, live, partitions)
    victim = live.pop()
    victim.kill()
    settle(server, group, live, partitions, timeout=15)
    session_expired = server.wait_event("member session expired", 5, group_id=group)
    assert session_expired["group_id"] == group


# --- offsets and admin -----------------------------------------------------------------------
def committed_by_admin(server: ServerProcess, group: str) -> dict[Partition, int]:
    admin = admin_for(server)
    result = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT)[group].result(TIMEOUT)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions
            if tp.offset >= 0}


def commit_in_group(server: ServerProcess, group: str, topic: str,
                    offsets: dict[int, int]) -> None:
    """Join the group with a confluent consumer in this process and commit synchronously (a
    commit that carries the member id and generation)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                         "enable.auto.commit": False, "session.timeout.ms": 6000,
                         "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest"})
    assigned: list[Any] = []
    consumer.subscribe([topic], on_assign=lambda c, ps: assigned.extend(ps))
    try:
        wait_until(lambda: consumer.poll(0.05) is None and len(assigned) == PARTITIONS,
                   TIMEOUT, message="the consumer to be assigned every partition")
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                        asynchronous=False)
        got = consumer.committed([TopicPartition(topic, p) for p in offsets], timeout=TIMEOUT)
        assert {tp.partition: tp.offset for tp in got} == offsets
        # a live group: its offsets cannot be deleted, nor the group itself
        admin = admin_for(server)
        with pytest.raises(KafkaException) as info:
            admin.delete_consumer_groups([group], request_timeout=TIMEOUT)[group].result(TIMEOUT)
        assert "NON_EMPTY_GROUP" in str(info.value) or "not empty" in str(info.value).lower()
    finally:
        consumer.close()


def test_offsets_commit_fetch_alter_and_delete_through_confluent(server: ServerProcess) -> None:
    topic, group = create_topic(server), unique("offsets")
    commit_in_group(server, group, topic, {0: 10, 3: 30})
    assert committed_by_admin(server, group) == {(topic, 0): 10, (topic, 3): 30}
    admin = admin_for(server)
    # the group is empty now: its offsets can be altered with a simple commit
    altered = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 1, 11)])],
        request_timeout=TIMEOUT)[group].result(TIMEOUT)
    assert [(tp.partition, tp.error) for tp in altered.topic_partitions] == [(1, None)]
    assert committed_by_admin(server, group) == {(topic, 0): 10, (topic, 1): 11,
                                                 (topic, 3): 30}
    described = group_state(server, group)
    assert described.state.name == "EMPTY" and not described.members
    admin.delete_consumer_groups([group], request_timeout=TIMEOUT)[group].result(TIMEOUT)
    assert committed_by_admin(server, group) == {}
    listed = admin.list_consumer_groups(request_timeout=TIMEOUT).result(TIMEOUT)
    assert group not in {g.group_id for g in listed.valid}


def test_describe_list_delete_offsets_through_kafka_python(server: ServerProcess,
                                                           members: list[Member]) -> None:
    from kafka import TopicPartition as KTopicPartition
    from kafka.structs import OffsetAndMetadata

    topic, other_topic, group = create_topic(server), create_topic(server), unique("kp-admin")
    partitions = all_partitions(topic)
    live = [Member(server, group, [topic], "range", name=f"k{i}") for i in range(2)]
    for member in live:
        members.append(member.start())
    settle(server, group, live, partitions)
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000,
                             client_id="kp-admin")
    try:
        described = admin.describe_groups([group])[group]
        assert described["error"] is None and described["group_state"] == "Stable"
        assert described["protocol_type"] == "consumer" and described["protocol_data"] == "range"
        assert len(described["members"]) == 2
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["group_state"] == "Stable"
        assert listed[group]["protocol_type"] == "consumer"
        assert listed[group]["group_type"] == "classic"
        assert group in {g["group_id"] for g in admin.list_groups(states_filter=["Stable"])}
        assert group not in {g["group_id"] for g in admin.list_groups(states_filter=["Empty"])}
        assert admin.delete_groups([group])[group] == "NonEmptyGroupError"
        for member in live:
            member.close()
        wait_until(lambda: admin.describe_groups([group])[group]["group_state"] == "Empty",
                   TIMEOUT, message="the group to be empty")
        admin.alter_group_offsets(group, {
            KTopicPartition(topic, 0): OffsetAndMetadata(5, "", -1),
            KTopicPartition(other_topic, 0): OffsetAndMetadata(7, "", -1)})
        offsets = admin.list_group_offsets({group: None})[group]
        assert {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()} == {
            (topic, 0): 5, (other_topic, 0): 7}
        deleted = admin.delete_group_offsets(group, [KTopicPartition(other_topic, 0)])
        assert [e.__name__ for e in deleted.values()] == ["NoError"]
        assert committed_by_admin(server, group) == {(topic, 0): 5}
        assert admin.delete_groups([group])[group] in (None, "OK")
        assert committed_by_admin(server, group) == {}
        assert group not in {g["group_id"] for g in admin.list_groups()}
    finally:
        admin.close()


def test_offset_delete_of_a_subscribed_topic_is_refused(server: ServerProcess,
                                                        members: list[Member]) -> None:
    from kafka import TopicPartition as KTopicPartition

    topic, group = create_topic(server), unique("subscribed")
    partitions = all_partitions(topic)
    live = [Member(server, group, [topic], "range", name="s0")]
    members.append(live[0].start())
    settle(server, group, live, partitions)
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000)
    try:
        deleted = admin.delete_group_offsets(group, [KTopicPartition(topic, 0)])
        assert [e.__name__ for e in deleted.values()] == ["GroupSubscribedToTopicError"]
    finally:
        admin.close()


@pytest.mark.slow
def test_offsets_survive_a_restart(tmp_path: Path) -> None:
    process = ServerProcess(tmp_path / "data", OVERRIDES).start()
    try:
        topic, group = create_topic(process), unique("restart")
        commit_in_group(process, group, topic, {2: 22, 5: 55})
        _ADMINS.pop(process.bootstrap, None)
        assert process.stop() == 0
        process.start()

        def loaded() -> dict[Partition, int] | None:
            try:  # the coordinator partitions load in the background after a start
                return committed_by_admin(process, group)
            except KafkaException as exc:
                assert "LOAD_IN_PROGRESS" in str(exc), exc
                return None

        assert wait_until(loaded, TIMEOUT, interval=0.1, message="the offsets to load") == {
            (topic, 2): 22, (topic, 5): 55}
        assert group_state(process, group).state.name == "EMPTY"
    finally:
        _ADMINS.pop(process.bootstrap, None)
        process.stop()
        process.kill()
