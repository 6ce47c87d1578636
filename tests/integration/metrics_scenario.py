"""A small group scenario for the metrics tests, with real clients, and a /metrics reader.

What it does to a server, and so what its metrics must say afterwards:

* topic ``TOPIC`` with ``PARTITIONS`` partitions, ``PER_PARTITION`` records in each;
* consumer group ``CONSUMER_GROUP`` (confluent-kafka ``group.protocol=consumer``): one member
  joins, then a second (two group epoch bumps: rebalances), both consume everything and commit
  after each record; the group ends stable;
* classic group ``CLASSIC_GROUP`` (confluent-kafka, classic protocol): one member consumes
  everything and commits after each record; it ends stable;
* ``LAGGING_GROUP`` commits offset ``LAGGING_OFFSET`` on partition 1 only (no members), so
  its lag there is ``PER_PARTITION - LAGGING_OFFSET``;
* ``DELETED_GROUP`` commits one offset, then OffsetDelete removes it.
"""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from tests.harness import ServerProcess, wait_until

PREFIX = "kafka_server_group_coordinator_metrics_"
TOPIC = "metrics-topic"
PARTITIONS = 4
PER_PARTITION = 10
CONSUMER_GROUP = "metrics-consumer-group"
CLASSIC_GROUP = "metrics-classic-group"
LAGGING_GROUP = "metrics-lagging-group"
LAGGING_OFFSET = 3
DELETED_GROUP = "metrics-deleted-group"
TIMEOUT = 30.0

OVERRIDES = {
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "true",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    """Every sample at ``url``, parsed by prometheus-client's parser."""
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """The sample named ``name`` (Kafka's name, dashes and all: ``PREFIX`` is added and dashes
    become underscores) with exactly ``labels``, or None."""
    return samples.get((full_name(name), frozenset(labels.items())))


def present(samples: Samples, name: str, **labels: str) -> float:
    """``value`` of a sample that must be there."""
    found = value(samples, name, **labels)
    assert found is not None, f"no {name} sample with {labels}"
    return found


def full_name(name: str) -> str:
    return PREFIX + name.replace("-", "_")


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples named ``name`` whose labels include ``labels``."""
    want, full = set(labels.items()), full_name(name)
    return sum(v for (n, ls), v in samples.items() if n == full and want <= ls)


@dataclass
class Member:
    """A consumer polling on its own thread, committing after each record."""

    conf: dict[str, object]
    consumed: set[tuple[int, int]] = field(default_factory=set)
    commits: int = 0
    commit_failures: int = 0
    assigned: set[int] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> Member:
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self) -> None:
        consumer = Consumer(self.conf)
        consumer.subscribe(
            [TOPIC],
            on_assign=lambda c, ps: self.assigned.update(p.partition for p in ps),
            on_revoke=lambda c, ps: self.assigned.difference_update(p.partition for p in ps))
        try:
            while not self.stop.is_set():
                msg = consumer.poll(0.1)
                if msg is None:
                    continue
                if msg.error():
                    self.errors.append(str(msg.error()))
                    continue
                partition, offset = msg.partition(), msg.offset()
                assert partition is not None and offset is not None  # a message's, not an error's
                self.consumed.add((partition, offset))
                try:
                    consumer.commit(message=msg, asynchronous=False)
                    self.commits += 1
                except Exception as exc:  # a commit racing a rebalance; the next one retries
                    self.commit_failures += 1
                    self.errors.append(repr(exc))
        finally:
            consumer.close()

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(15)


@dataclass
class Scenario:
    server: ServerProcess
    members: list[Member] = field(default_factory=list)

    def member(self, group: str, protocol: str) -> Member:
        conf: dict[str, object] = {
            "bootstrap.servers": self.server.bootstrap, "group.id": group,
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 0}
        if protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
        member = Member(conf).start()
        self.members.append(member)
        return member

    def consumed(self, group_members: list[Member]) -> int:
        return len(set().union(*(m.consumed for m in group_members)))

    def run(self) -> None:
        bootstrap = self.server.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
            future.result(15)
        producer = Producer({"bootstrap.servers": bootstrap})
        for partition in range(PARTITIONS):
            for i in range(PER_PARTITION):
                producer.produce(TOPIC, value=f"record-{i}".encode(), partition=partition)
        assert producer.flush(15) == 0

        first = self.member(CONSUMER_GROUP, "consumer")
        wait_until(lambda: len(first.assigned) == PARTITIONS, TIMEOUT,
                   message="the first consumer-protocol member to get every partition")
        second = self.member(CONSUMER_GROUP, "consumer")
        wait_until(lambda: second.assigned and len(first.assigned | second.assigned)
                   == PARTITIONS and not first.assigned & second.assigned, TIMEOUT,
                   message="the partitions to be split between the two members")
        classic = self.member(CLASSIC_GROUP, "classic")
        expected = PARTITIONS * PER_PARTITION
        wait_until(lambda: self.consumed([first, second]) == expected, TIMEOUT,
                   message="the consumer group to consume every record")
        wait_until(lambda: len(classic.consumed) == expected, TIMEOUT,
                   message="the classic group to consume every record")
        # each member commits after a record is consumed: its last commit answered (and
        # counted by the server) before the metrics are read, however slow the machine
        wait_until(lambda: all(m.commits + m.commit_failures >= len(m.consumed)
                               for m in (first, second, classic)), TIMEOUT,
                   message="each member's commit of its last record")

        for group, offset, partition in ((LAGGING_GROUP, LAGGING_OFFSET, 1),
                                         (DELETED_GROUP, 5, 0)):
            committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  "enable.auto.commit": False, "log_level": 0})
            try:
                committer.commit(offsets=[TopicPartition(TOPIC, partition, offset)],
                                 asynchronous=False)
            finally:
                committer.close()
        self.delete_offsets(DELETED_GROUP, 0)

    def delete_offsets(self, group: str, partition: int) -> None:
        from kafka import KafkaAdminClient
        from kafka import TopicPartition as KTopicPartition

        admin = KafkaAdminClient(bootstrap_servers=self.server.bootstrap,
                                 request_timeout_ms=10000)
        try:
            result = admin.delete_group_offsets(group, [KTopicPartition(TOPIC, partition)])
            assert all(error.__name__ == "NoError" for error in result.values()), result
        finally:
            admin.close()

    def close(self) -> None:
        for member in self.members:
            member.close()


@contextmanager
def scenario(server: ServerProcess) -> Iterator[Scenario]:
    """Run the scenario; its members keep polling (the groups stay stable) until exit."""
    running = Scenario(server)
    try:
        running.run()
        yield running
    finally:
        running.close()
