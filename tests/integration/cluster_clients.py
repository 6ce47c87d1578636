"""Real clients for the cluster failover tests (``test_cluster_*.py``), each on a thread of its
own, journaling what the cluster acknowledged so a test can check, after the faults, that
nothing was lost and nothing was read twice beyond what the protocol allows.

- ``SequenceProducer``: confluent-kafka's idempotent producer (``acks=all``), value ``n`` to
  partition ``n % partitions``, in order; ``check_log`` reads the topic back and finds every
  acknowledged value once, each partition's values in the order they were produced (no
  duplicates, no gaps).
- ``GroupConsumer`` (``ConfluentConsumer`` in a classic or a consumer-protocol group,
  ``KafkaPythonConsumer``, ``AiokafkaConsumer``; ``CONSUMERS`` by name): one member of a group
  that consumes and commits its positions synchronously every ``COMMIT_EVERY_S``, retrying
  through errors; the members of a group share one ``Journal``, and ``check_reads`` holds them
  to the protocol: a record is read again only from an offset at or above the last commit
  acknowledged for its partition (after a failed commit or a rebalance the group may restart
  from the committed offset; never from below one).
- ``Faults``: the moves and failures of the done-when list, found through Kafka's own answers
  (Metadata for leaders, DescribeGroups for the coordinator) and applied through
  ``kafka_coordinator``'s ``brokers``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator.testing import wait_until
from kafka_coordinator import Coordinator

COMMIT_EVERY_S = 0.3
STEP_TIMEOUT_S = 60.0
"""How long each step of a test may take (a loaded machine's clients retry with backoffs)."""
KAFKA_PYTHON_LOG_LEVEL = logging.CRITICAL
"""kafka-python's retries are journaled instead; set DEBUG here to see its requests."""
QUIET = {"log_level": 0, "reconnect.backoff.max.ms": 200, "retry.backoff.max.ms": 200}


def wait_for(condition: Callable[[], Any], timeout: float, what: str,
             interval: float = 0.05) -> Any:
    """``condition()``'s first truthy answer, polled until ``timeout`` s have passed."""
    return wait_until(condition, timeout, interval, message=what)


# --- the producer ---------------------------------------------------------------------------------
class SequenceProducer(threading.Thread):
    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float = 100.0,
                 idempotent: bool = True) -> None:
        super().__init__(name=f"producer-{topic}", daemon=True)
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.rate, self.idempotent = rate, idempotent
        self.acked: list[int] = []
        self.errors: list[str] = []
        self.sent = 0
        self.stopping = threading.Event()
        self.failure: BaseException | None = None
        self._lock = threading.Lock()

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "enable.idempotence": self.idempotent, "linger.ms": 5,
                             "message.timeout.ms": 120000, "client.id": "sequence-producer",
                             **QUIET})

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                with self._lock:
                    self.acked.append(int(msg.value()))
            else:
                self.errors.append(err.name())

        try:
            next_at = time.monotonic()
            while not self.stopping.is_set():
                producer.produce(self.topic, value=str(self.sent).encode(),
                                 partition=self.sent % self.partitions, on_delivery=delivered)
                self.sent += 1
                next_at += 1.0 / self.rate
                producer.poll(max(0.0, next_at - time.monotonic()))
            assert producer.flush(120) == 0, "records left undelivered"
        except BaseException as exc:  # the test raises it when it stops the thread
            self.failure = exc

    def stop(self) -> None:
        self.stopping.set()
        self.join(150)
        assert not self.is_alive(), "the producer did not stop"
        if self.failure is not None:
            raise self.failure


def read_topic(bootstrap: str, topic: str, partitions: int) -> dict[int, list[int]]:
    """Every value of ``topic``, by partition, in offset order (to the high watermark)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "read-back",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", **QUIET})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values: dict[int, list[int]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + STEP_TIMEOUT_S

        def behind() -> dict[int, int]:  # the position passes transaction markers too
            return {tp.partition: tp.offset for tp in consumer.position(consumer.assignment())
                    if ends[tp.partition] > 0 and tp.offset < ends[tp.partition]}

        while lagging := behind():
            assert time.monotonic() < deadline, f"read back to {lagging} of {ends}"
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                continue
            partition, value = message.partition(), message.value()
            assert partition is not None and value is not None
            values[partition].append(int(value))
        return values
    finally:
        consumer.close()


def check_log(stored: dict[int, list[int]], acked: Iterable[int], partitions: int) -> None:
    """Each acknowledged value once, each partition's in the order it was produced in."""
    acked = sorted(acked)
    every = [value for values in stored.values() for value in values]
    duplicates = len(every) - len(set(every))
    assert duplicates == 0, f"{duplicates} records stored twice"
    missing = set(acked) - set(every)
    assert not missing, f"{len(missing)} acknowledged records lost: {sorted(missing)[:20]}"
    for partition, values in stored.items():
        assert all(value % partitions == partition for value in values)
        assert values == sorted(values), f"partition {partition} out of produce order"
        produced = [value for value in acked if value % partitions == partition]
        if produced:  # no gap: nothing acknowledged is missing between what was stored
            assert values[:len(produced)] == produced, f"a gap in partition {partition}"


# --- the consumers --------------------------------------------------------------------------------
@dataclass
class Journal:
    """What the members of a group read and had acknowledged, in the order it happened."""

    events: list[tuple[str, int, int]] = field(default_factory=list)  # (kind, partition, offset)
    values: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def read(self, partition: int, offset: int, value: bytes) -> None:
        with self._lock:
            self.events.append(("read", partition, offset))
            self.values.append(int(value))

    def committed(self, offsets: dict[int, int]) -> None:
        with self._lock:
            self.events.extend(("commit", p, o) for p, o in sorted(offsets.items()))

    def error(self, kind: str) -> None:
        with self._lock:
            self.errors.append(kind)

    def distinct_values(self) -> set[int]:
        with self._lock:
            return set(self.values)


def check_reads(journal: Journal) -> int:
    """No record read again from below an acknowledged commit of its partition; the number of
    records read more than once (at or above the acknowledged commit: allowed)."""
    floor: dict[int, int] = {}
    seen: dict[int, set[int]] = {}
    again = 0
    with journal._lock:
        events = list(journal.events)
    for kind, partition, offset in events:
        if kind == "commit":
            floor[partition] = max(floor.get(partition, -1), offset)
            continue
        offsets = seen.setdefault(partition, set())
        if offset in offsets:
            again += 1
            assert offset >= floor.get(partition, -1), (
                f"partition {partition}: offset {offset} read again after a commit of "
                f"{floor[partition]} was acknowledged")
        offsets.add(offset)
    return again


class GroupConsumer(threading.Thread):
    """One member of ``group``: reads ``topic`` and commits its positions (the client's: the
    next record it would hand over, of each partition it owns) every ``COMMIT_EVERY_S`` until
    ``stop()``. The members of a group share one ``Journal``."""

    flavour = "?"

    def __init__(self, bootstrap: str, topic: str, group: str,
                 journal: Journal | None = None) -> None:
        super().__init__(name=f"{self.flavour}-{group}", daemon=True)
        self.bootstrap, self.topic, self.group = bootstrap, topic, group
        self.journal = journal if journal is not None else Journal()
        self.stopping = threading.Event()
        self.failure: BaseException | None = None
        self.reads = 0
        self.last_commit_at = 0.0

    def took(self, partition: int, offset: int, value: bytes) -> None:
        self.journal.read(partition, offset, value)
        self.reads += 1

    def drive(self, poll: Callable[[], Mapping[Any, Iterable[Any]]],
              positions: Callable[[], dict[int, int]],
              commit: Callable[[dict[int, int]], None],
              errors: tuple[type[BaseException], ...]) -> None:
        """kafka-python's and aiokafka's loop: ``poll()`` gives ``{TopicPartition: [record,
        ...]}``; every ``COMMIT_EVERY_S`` the ``positions()`` (partition -> offset) of what
        it owns are ``commit``-ted; an error of ``errors`` is journaled and retried."""
        next_commit = time.monotonic() + COMMIT_EVERY_S
        while not self.stopping.is_set():
            try:
                batches = poll()
            except errors as exc:
                self.journal.error(type(exc).__name__)
                continue
            for tp, records in batches.items():
                for record in records:
                    self.took(tp.partition, record.offset, record.value)
            due = self.commit_due(next_commit)
            if due is None:
                continue
            next_commit = due
            try:
                offsets = positions()
                if not offsets:
                    continue
                commit(offsets)
            except errors as exc:
                self.journal.error(f"commit {type(exc).__name__}")
                continue
            self.committed(offsets)

    def committed(self, offsets: dict[int, int]) -> None:
        self.journal.committed(offsets)
        self.last_commit_at = time.monotonic()

    def commit_due(self, next_commit: float) -> float | None:
        """The time of the commit after this one if one is due now, else None."""
        now = time.monotonic()
        return now + COMMIT_EVERY_S if now >= next_commit and self.reads else None

    def stop(self) -> None:
        self.stopping.set()
        self.join(60)
        assert not self.is_alive(), f"the {self.flavour} consumer did not stop"
        if self.failure is not None:
            raise self.failure

    def run(self) -> None:
        try:
            self.loop()
        except BaseException as exc:  # raised by stop(), in the test's thread
            self.failure = exc

    def loop(self) -> None:
        raise NotImplementedError


class ConfluentConsumer(GroupConsumer):
    def __init__(self, bootstrap: str, topic: str, group: str, protocol: str,
                 journal: Journal | None = None) -> None:
        self.flavour = f"confluent-{protocol}"
        self.protocol = protocol
        super().__init__(bootstrap, topic, group, journal)

    def loop(self) -> None:
        from confluent_kafka import Consumer, KafkaException

        config = {"bootstrap.servers": self.bootstrap, "group.id": self.group,
                  "group.protocol": self.protocol, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "client.id": self.flavour, **QUIET}
        consumer = Consumer(config)
        consumer.subscribe([self.topic])
        next_commit = time.monotonic() + COMMIT_EVERY_S
        try:
            while not self.stopping.is_set():
                message = consumer.poll(0.1)
                if message is not None:
                    error = message.error()
                    if error is None:
                        partition, offset, value = (message.partition(), message.offset(),
                                                    message.value())
                        assert partition is not None and offset is not None and value is not None
                        self.took(partition, offset, value)
                    else:
                        self.journal.error(error.name())
                due = self.commit_due(next_commit)
                if due is None:
                    continue
                next_commit = due
                offsets = [tp for tp in consumer.position(consumer.assignment())
                           if tp.offset >= 0]
                if not offsets:
                    continue
                try:
                    result = consumer.commit(offsets=offsets, asynchronous=False)
                except KafkaException as exc:
                    self.journal.error(f"commit {exc.args[0].name()}")
                    continue
                self.committed({tp.partition: tp.offset for tp in result or ()
                                if tp.error is None})
        finally:
            consumer.close()


class KafkaPythonConsumer(GroupConsumer):
    flavour = "kafka-python"

    def loop(self) -> None:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata

        logging.getLogger("kafka").setLevel(KAFKA_PYTHON_LOG_LEVEL)
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap.split(","), group_id=self.group,
            client_id=self.flavour, enable_auto_commit=False, auto_offset_reset="earliest",
            session_timeout_ms=6000, heartbeat_interval_ms=500, request_timeout_ms=8000,
            reconnect_backoff_max_ms=200, retry_backoff_ms=100, metadata_max_age_ms=2000)
        consumer.subscribe([self.topic])
        consumer.topics()  # its metadata first (see the README's kafka-python example)

        def positions() -> dict[int, int]:
            return {tp.partition: position for tp in consumer.assignment()
                    if (position := consumer.position(tp, timeout_ms=2000)) is not None
                    and position >= 0}

        def commit(offsets: dict[int, int]) -> None:
            consumer.commit({TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1)
                             for p, o in offsets.items()})

        try:
            self.drive(lambda: consumer.poll(timeout_ms=100), positions, commit, (KafkaError,))
        finally:
            consumer.close(autocommit=False)


class AiokafkaConsumer(GroupConsumer):
    """aiokafka's consumer, its coroutines run one at a time on an event loop of the thread's
    own."""

    flavour = "aiokafka"

    def loop(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition
        from aiokafka.errors import KafkaError

        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
        with asyncio.Runner() as runner:
            async def started() -> AIOKafkaConsumer:
                consumer = AIOKafkaConsumer(
                    self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
                    client_id=self.flavour, enable_auto_commit=False,
                    auto_offset_reset="earliest", session_timeout_ms=6000,
                    heartbeat_interval_ms=500, request_timeout_ms=8000, retry_backoff_ms=100,
                    metadata_max_age_ms=2000)
                await consumer.start()
                return consumer

            async def positions() -> dict[int, int]:
                return {tp.partition: position for tp in consumer.assignment()
                        if (position := await consumer.position(tp)) >= 0}

            consumer = runner.run(started())
            try:
                self.drive(lambda: runner.run(consumer.getmany(timeout_ms=100)),
                           lambda: runner.run(positions()),
                           lambda offsets: runner.run(consumer.commit(
                               {TopicPartition(self.topic, p): o for p, o in offsets.items()})),
                           (KafkaError,))
            finally:
                runner.run(consumer.stop())


CONSUMERS: dict[str, Callable[[str, str, str, Journal | None], GroupConsumer]] = {
    "confluent-classic": lambda b, t, g, j: ConfluentConsumer(b, t, g, "classic", j),
    "confluent-consumer": lambda b, t, g, j: ConfluentConsumer(b, t, g, "consumer", j),
    "kafka-python": KafkaPythonConsumer,
    "aiokafka": AiokafkaConsumer,
}


# --- the faults -----------------------------------------------------------------------------------
class Faults:
    """The moves and failures, each found through what Kafka clients are told."""

    def __init__(self, server: Coordinator, topic: str, group: str) -> None:
        from confluent_kafka.admin import AdminClient

        self.server, self.topic, self.group = server, topic, group
        self.admin = AdminClient({"bootstrap.servers": server.bootstrap_servers, **QUIET})

    def coordinator(self) -> int:
        """The group's coordinator as a describe of the group (through FindCoordinator) says.
        A new admin client each time: librdkafka's (2.16.1) keeps the coordinator it found and
        asks it again after a NOT_COORDINATOR answer to ConsumerGroupDescribe."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        def found() -> int | None:
            admin = AdminClient({"bootstrap.servers": self.server.bootstrap_servers, **QUIET})
            try:
                description = admin.describe_consumer_groups(
                    [self.group], request_timeout=5)[self.group].result(10)
            except KafkaException:
                return None
            return int(description.coordinator.id)

        result: int = wait_for(found, STEP_TIMEOUT_S, f"group {self.group}'s coordinator",
                               interval=0.2)
        return result

    def leaders(self) -> dict[int, int]:
        """Each partition's leader, as Metadata says."""
        topic = self.admin.list_topics(self.topic, timeout=10).topics[self.topic]
        return {p: int(meta.leader) for p, meta in topic.partitions.items()}

    def wait_for_leaders(self, condition: Callable[[dict[int, int]], bool], what: str) -> None:
        wait_for(lambda: condition(self.leaders()), STEP_TIMEOUT_S, what, interval=0.1)

    def running(self) -> list[int]:
        return self.server.brokers.running()


def progressed(consumers: Iterable[GroupConsumer], producer: SequenceProducer,
               since: float, records: int = 20) -> None:
    """Wait until the producer had ``records`` more acknowledged and each consumer read
    ``records`` more and had a commit acknowledged after ``since``."""
    consumers = list(consumers)
    produced, read = producer.acked_count(), [c.reads for c in consumers]
    wait_for(lambda: producer.acked_count() >= produced + records, STEP_TIMEOUT_S,
             "the producer to carry on")
    for consumer, before in zip(consumers, read, strict=True):
        def carried_on(c: GroupConsumer = consumer, n: int = before) -> bool:
            return c.reads >= n + records and c.last_commit_at > since

        wait_for(carried_on, STEP_TIMEOUT_S,
                 f"the {consumer.flavour} consumer to read and commit again")


MOVES_METRIC = "kafka_server_group_coordinator_metrics_cluster_moves_total"


def moves_counted(server: Coordinator) -> dict[tuple[str, str], float]:
    """The server's ``cluster_moves_total`` by (kind, reason), from its Prometheus exporter."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    assert server.metrics_url is not None
    with urllib.request.urlopen(server.metrics_url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {(sample.labels["kind"], sample.labels["reason"]): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples
            if sample.name == MOVES_METRIC}
