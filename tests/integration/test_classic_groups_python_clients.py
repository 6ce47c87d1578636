"""Classic groups with the pure-Python clients: kafka-python 3 (range, roundrobin, sticky,
cooperative-sticky) and aiokafka (range, roundrobin, sticky) consumers, each polling in its own
thread: every partition owned by exactly one member after each join and leave, with
cooperative-sticky a join revokes only the partitions that move; offsets committed by members
of the group are fetched back.

These consumers fetch records between rebalances, so they need ListOffsets and Fetch too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness import ServerProcess, wait_until
from tests.integration.test_classic_groups import (
    _ADMINS,
    OVERRIDES,
    TIMEOUT,
    Partition,
    all_partitions,
    committed_by_admin,
    create_topic,
    settle,
    unique,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("pyclients") / "data", OVERRIDES) as process:
        try:
            yield process
        finally:
            _ADMINS.pop(process.bootstrap, None)


class ThreadMember:
    """A consumer polling in its own thread; rebalance callbacks are recorded as events."""

    def __init__(self, server: ServerProcess, group: str, topic: str, strategy: str,
                 name: str) -> None:
        self.server, self.group, self.topic, self.strategy = server, group, topic, strategy
        self.name = name
        self.events: list[tuple[str, set[Partition]]] = []
        self.errors: list[BaseException] = []
        self.commits: list[dict[int, int]] = []  # offsets to commit from the polling thread
        self.committed: dict[Partition, int | None] | None = None  # None: no offset
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._guarded, daemon=True, name=name)

    def record(self, kind: str, partitions: Any) -> None:
        with self._lock:
            self.events.append((kind, {(tp.topic, tp.partition) for tp in partitions}))

    def start(self) -> ThreadMember:
        self._thread.start()
        return self

    def _guarded(self) -> None:
        try:
            self.run()
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)

    def run(self) -> None:
        raise NotImplementedError

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(20)
        assert not self._thread.is_alive(), f"{self.name} did not close"

    # --- what it saw -------------------------------------------------------------------------
    def mark(self) -> int:
        with self._lock:
            return len(self.events)

    def since(self, mark: int, *kinds: str) -> set[Partition]:
        with self._lock:
            return {p for kind, parts in self.events[mark:] if kind in kinds for p in parts}

    @property
    def owned(self) -> set[Partition]:
        if self.errors:
            raise AssertionError(f"{self.name} failed: {self.errors[0]!r}") from self.errors[0]
        owned: set[Partition] = set()
        with self._lock:
            for kind, parts in self.events:
                owned = owned - parts if kind == "revoke" else owned | parts
        return owned


# --- kafka-python ----------------------------------------------------------------------------
def kafka_python_assignor(strategy: str) -> Any:
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    return {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
            "sticky": StickyPartitionAssignor,
            "cooperative-sticky": CooperativeStickyAssignor}[strategy]


class KafkaPythonMember(ThreadMember):
    def run(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
        from kafka.structs import OffsetAndMetadata

        member = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                member.record("revoke", revoked)

            def on_partitions_assigned(self, assigned: Any) -> None:
                member.record("assign", assigned)

            def on_partitions_lost(self, lost: Any) -> None:
                member.record("revoke", lost)

        consumer = KafkaConsumer(
            bootstrap_servers=self.server.bootstrap, group_id=self.group,
            client_id=f"kp-{self.name}", enable_auto_commit=False,
            auto_offset_reset="earliest", session_timeout_ms=6000, heartbeat_interval_ms=300,
            metadata_max_age_ms=1000,
            partition_assignment_strategy=[kafka_python_assignor(self.strategy)])
        try:
            consumer.subscribe([self.topic], listener=Listener())
            # kafka-python 3.0.12 loses a join's result when a poll times out while a rejoin
            # it started for a metadata change is in flight (need_rejoin() turns False once the
            # leader's assignment snapshot matches, so nothing awaits the finished join: the
            # member never applies its assignment and its session expires). Its first join
            # otherwise runs before the subscribed topic's metadata arrives and is followed by
            # exactly such a rejoin; a blocking metadata fetch now makes the first join final.
            consumer.topics()
            while not self.stopping:
                consumer.poll(timeout_ms=100)
                while self.commits:
                    offsets = self.commits.pop(0)
                    consumer.commit({TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1)
                                     for p, o in offsets.items()})
                    self.committed = {
                        (self.topic, p): consumer.committed(TopicPartition(self.topic, p))
                        for p in offsets}
        finally:
            consumer.close()


# --- aiokafka --------------------------------------------------------------------------------
def aiokafka_assignor(strategy: str) -> Any:
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    return {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
            "sticky": StickyPartitionAssignor}[strategy]


class AiokafkaMember(ThreadMember):
    def run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
        from aiokafka.structs import OffsetAndMetadata

        member = self

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked: Any) -> None:
                member.record("revoke", revoked)

            async def on_partitions_assigned(self, assigned: Any) -> None:
                member.record("assign", assigned)

        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.server.bootstrap, group_id=self.group,
            client_id=f"aio-{self.name}", enable_auto_commit=False,
            auto_offset_reset="earliest", session_timeout_ms=6000, heartbeat_interval_ms=300,
            metadata_max_age_ms=1000,
            partition_assignment_strategy=(aiokafka_assignor(self.strategy),))
        await consumer.start()
        try:
            consumer.subscribe([self.topic], listener=Listener())
            while not self.stopping:
                await consumer.getmany(timeout_ms=100)
                while self.commits:
                    offsets = self.commits.pop(0)
                    await consumer.commit({TopicPartition(self.topic, p):
                                           OffsetAndMetadata(o, "") for p, o in offsets.items()})
                    self.committed = {
                        (self.topic, p): await consumer.committed(TopicPartition(self.topic, p))
                        for p in offsets}
        finally:
            await consumer.stop()


@pytest.fixture
def started() -> Iterator[list[ThreadMember]]:
    members: list[ThreadMember] = []
    yield members
    for member in members:
        member._stop.set()
    for member in members:
        member._thread.join(20)


CASES = [("kafka-python", s) for s in ("range", "roundrobin", "sticky", "cooperative-sticky")] + [
    ("aiokafka", s) for s in ("range", "roundrobin", "sticky")]


def make(client: str, server: ServerProcess, group: str, topic: str, strategy: str,
         name: str) -> ThreadMember:
    cls = KafkaPythonMember if client == "kafka-python" else AiokafkaMember
    return cls(server, group, topic, strategy, name)


@pytest.mark.slow
@pytest.mark.parametrize(("client", "strategy"), CASES)
def test_three_members_join_and_leave(server: ServerProcess, started: list[ThreadMember],
                                      client: str, strategy: str) -> None:
    topic, group = create_topic(server), unique(f"{client}-{strategy}")
    partitions = all_partitions(topic)
    cooperative = strategy == "cooperative-sticky"
    live: list[ThreadMember] = []
    for index in range(3):
        before = {m.name: m.owned for m in live}
        marks = {m.name: m.mark() for m in live}
        member = make(client, server, group, topic, strategy, f"m{index}")
        started.append(member.start())
        live.append(member)
        after = settle(server, group, live, partitions)
        if cooperative:
            for old in live[:-1]:
                revoked = old.since(marks[old.name], "revoke")
                assert revoked == before[old.name] - after[old.name], (old.name, revoked)
    leaving = live.pop(0)
    before = {m.name: m.owned for m in live}
    marks = {m.name: m.mark() for m in live}
    leaving.close()
    after = settle(server, group, live, partitions)
    for member in live:
        if cooperative:
            assert member.since(marks[member.name], "revoke") == set()
        assert before[member.name] <= after[member.name] or not cooperative


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka"])
def test_members_commit_and_fetch_offsets(server: ServerProcess, started: list[ThreadMember],
                                          client: str) -> None:
    topic, group = create_topic(server), unique(f"{client}-commit")
    partitions = all_partitions(topic)
    member = make(client, server, group, topic, "range", "c0")
    started.append(member.start())
    settle(server, group, [member], partitions)
    member.commits.append({0: 3, 4: 9})
    committed = wait_until(lambda: member.committed or member.errors, TIMEOUT,
                           message="the member to commit")
    assert not member.errors, member.errors
    assert {tp: (o.offset if hasattr(o, "offset") else o) for tp, o in committed.items()} == {
        (topic, 0): 3, (topic, 4): 9}
    assert committed_by_admin(server, group) == {(topic, 0): 3, (topic, 4): 9}
