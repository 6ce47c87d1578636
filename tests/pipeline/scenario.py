"""Drive the real server with real clients: a classic group, a consumer-protocol group scaling
up and down, a share group (KIP-932) scaling up and down while it consumes, a streams group
(KIP-1071, protocol-level members: ``streams_driver``) scaling up and down, and plain offset
commits. Used by ``test_scenario.py``."""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition
from kafka.structs import OffsetAndMetadata
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest

import protocol
from tests.harness import wait_until
from tests.pipeline import streams_driver

OVERRIDES = {
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
    "group.share.session.timeout.ms": "6000",
    "group.share.min.session.timeout.ms": "1000",
    "group.share.heartbeat.interval.ms": "300",
    "group.share.min.heartbeat.interval.ms": "100",
    "group.share.assignment.interval.ms": "0",
    "group.initial.rebalance.delay.ms": "0",
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "200",  # STREAMS_INTERVAL_MS
    "group.streams.num.standby.replicas": "1",
}
CLASSIC_GROUP = "classic-app"
CONSUMER_GROUP = "scaling-app"
SHARE_GROUP = "queue-app"
COMMIT_GROUP = "committer"
PARTITIONS = 6
SHARE_RECORDS = 60  # produced once the share group has 3 members, all consumed
STREAMS_GROUP = "streams-app"
STREAMS_INTERVAL_MS = 200
STREAMS_TASKS = 2 * PARTITIONS  # subtopology 0 reads the topic, 1 its repartition topic
STREAMS_STANDBY = PARTITIONS  # subtopology 1 is stateful: a standby of each task (2+ processes)
STREAMS_INTERNAL_TOPICS = (f"{STREAMS_GROUP}-repartition", f"{STREAMS_GROUP}-store-changelog")


@dataclass
class Member:
    """A confluent-kafka consumer polling on its own thread."""

    conf: dict[str, Any]
    topic: str
    assigned: set[int] = field(default_factory=set)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    to_commit: int | None = None
    committed: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Member:
        self.consumer = Consumer({**self.conf, "log_level": 0, "enable.auto.commit": False})
        self.consumer.subscribe([self.topic], on_assign=self._assign, on_revoke=self._revoke,
                                on_lost=self._revoke)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _assign(self, consumer: Consumer, parts: list[TopicPartition]) -> None:
        with self.lock:
            if self.conf.get("group.protocol") == "consumer":
                self.assigned |= {p.partition for p in parts}  # incremental
            else:
                self.assigned = {p.partition for p in parts}

    def _revoke(self, consumer: Consumer, parts: list[TopicPartition]) -> None:
        with self.lock:
            self.assigned -= {p.partition for p in parts}

    def _run(self) -> None:
        while not self.stop.is_set():
            self.consumer.poll(0.05)
            if self.to_commit is not None:
                offset, self.to_commit = self.to_commit, None
                parts = [TopicPartition(self.topic, p, offset) for p in sorted(self.owned())]
                if parts:  # committed from the polling thread: librdkafka serves it there
                    self.consumer.commit(offsets=parts, asynchronous=False)
                self.committed.set()
        self.consumer.close()

    def owned(self) -> set[int]:
        with self.lock:
            return set(self.assigned)

    def commit(self, offset: int) -> None:
        self.committed.clear()
        self.to_commit = offset
        assert self.committed.wait(20), "commit did not complete"

    def close(self) -> None:
        self.stop.set()
        self.thread.join(20)


def create_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, PARTITIONS)]).values():
        future.result(15)


def _settled(members: list[Member]) -> bool:
    owned = [m.owned() for m in members]
    every = [p for o in owned for p in o]
    return len(every) == PARTITIONS == len(set(every)) and all(owned)


def classic_group(bootstrap: str, topic: str) -> None:
    """Three classic members join one by one (committing), then one leaves."""
    conf = {"bootstrap.servers": bootstrap, "group.id": CLASSIC_GROUP,
            "group.protocol": "classic", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300, "partition.assignment.strategy": "range"}
    members: list[Member] = []
    for _ in range(3):
        members.append(Member(conf, topic).start())
        wait_until(lambda: _settled(members), 30, message="classic members to settle")
    members[0].commit(10)
    members.pop(1).close()
    wait_until(lambda: _settled(members), 30, message="classic group after a leave")
    members[0].commit(20)
    for m in members:
        m.close()


def consumer_group(bootstrap: str, topic: str) -> None:
    """A KIP-848 group scaling 1 -> 3 -> 1 member, then all leave."""
    conf = {"bootstrap.servers": bootstrap, "group.id": CONSUMER_GROUP,
            "group.protocol": "consumer"}
    members: list[Member] = []
    for _ in range(3):
        members.append(Member(conf, topic).start())
        wait_until(lambda: _settled(members), 30, message="consumer group to scale up")
    members[-1].commit(5)
    for _ in range(2):
        members.pop(0).close()
        wait_until(lambda: _settled(members), 30, message="consumer group to scale down")
    members[0].commit(7)
    members[0].close()


@dataclass
class ShareMember:
    """A confluent-kafka share consumer, created, polled and closed on its own thread (it is
    not thread-safe); records are acknowledged implicitly by the next poll."""

    conf: dict[str, Any]
    topic: str
    received: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> ShareMember:
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self) -> None:
        consumer = ShareConsumer({**self.conf, "log_level": 0})
        consumer.subscribe([self.topic])
        try:
            while not self.stop.is_set():
                self.received += sum(1 for m in consumer.poll(0.05) if m.error() is None)
        finally:
            consumer.close()  # acknowledges the last poll's records and leaves the group

    def close(self) -> None:
        self.stop.set()
        self.thread.join(20)


def describe_share_group(bootstrap: str, group_id: str) -> Any:
    """ShareGroupDescribe v1 of one group, sent raw (confluent-kafka's AdminClient has no
    share group describe)."""
    request = protocol.make(ShareGroupDescribeRequest, group_ids=(group_id,),
                            include_authorized_operations=False)
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(protocol.encode_request(request, 1, "scenario"))
        size = struct.unpack(">i", _read(sock, 4))[0]
        _, response = protocol.decode_response(
            protocol.schema(protocol.ApiKey.SHARE_GROUP_DESCRIBE, 1), _read(sock, size))
    (group,) = response.groups
    return group


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    return data


def _share_settled(bootstrap: str, members: int) -> bool:
    """``members`` members, all at the epoch of a target computed for the current group epoch,
    every partition assigned and every member with some."""
    group = describe_share_group(bootstrap, SHARE_GROUP)
    if group.error_code != 0 or len(group.members) != members:
        return False
    if group.assignment_epoch != group.group_epoch:
        return False
    owned = [{p for tp in m.assignment.topic_partitions for p in tp.partitions}
             for m in group.members]
    return (all(m.member_epoch == group.assignment_epoch for m in group.members)
            and all(owned) and len(set().union(*owned)) == PARTITIONS)


def share_group(bootstrap: str, topic: str) -> None:
    """A share group scaling 1 -> 3 members, consuming ``SHARE_RECORDS`` records between them
    (share-partition state records), then 3 -> 1, then the last leaves."""
    conf = {"bootstrap.servers": bootstrap, "group.id": SHARE_GROUP}
    members: list[ShareMember] = []
    for n in range(1, 4):
        members.append(ShareMember(conf, topic).start())
        wait_until(partial(_share_settled, bootstrap, n), 30, interval=0.1,
                   message="share group to scale up")
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(SHARE_RECORDS):
        producer.produce(topic, value=b"job-%d" % i, partition=i % PARTITIONS)
    assert producer.flush(15) == 0
    wait_until(lambda: sum(m.received for m in members) >= SHARE_RECORDS, 30,
               message="share group to consume the records")
    for n in (2, 1):
        members.pop(0).close()
        wait_until(partial(_share_settled, bootstrap, n), 30, interval=0.1,
                   message="share group to scale down")
    members[0].close()
    wait_until(lambda: not describe_share_group(bootstrap, SHARE_GROUP).members, 30,
               interval=0.1, message="share group to be empty")


def streams_group(bootstrap: str, topic: str) -> list[tuple[int, int]]:
    """A streams group of protocol-level members scaling 1 -> 3 -> 1, then the last leaves
    (the coordinator creates the topology's internal topics on the way). Returns (group epoch,
    members) of each step once the group is Stable."""
    members: list[streams_driver.StreamsMember] = []
    steps: list[tuple[int, int]] = []
    topology = streams_driver.topology(STREAMS_GROUP, topic)

    def settle(message: str) -> None:
        standby = STREAMS_STANDBY if len(members) > 1 else 0
        epoch = wait_until(partial(streams_driver.settled, bootstrap, STREAMS_GROUP, members,
                                   STREAMS_TASKS, standby), 30, interval=0.05, message=message)
        steps.append((epoch, len(members)))

    for _ in range(3):
        members.append(streams_driver.StreamsMember(bootstrap, STREAMS_GROUP, topology))
        settle("streams group to scale up")
    for _ in range(2):
        members.pop(0).leave()
        settle("streams group to scale down")
    members.pop().leave()
    wait_until(lambda: not streams_driver.describe(bootstrap, STREAMS_GROUP).members, 30,
               interval=0.05, message="streams group to be empty")
    return steps


def plain_commits(bootstrap: str, topic: str) -> None:
    """kafka-python: assign() and commit() with no group membership, three rounds."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=COMMIT_GROUP,
                             enable_auto_commit=False)
    try:
        parts = [KTopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(parts)
        for round_ in range(3):
            consumer.commit({tp: OffsetAndMetadata(100 * (round_ + 1) + tp.partition, "", -1)
                             for tp in parts})
    finally:
        consumer.close()
