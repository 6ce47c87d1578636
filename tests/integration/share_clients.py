"""Clients for the share group (KIP-932) integration tests.

* :class:`ShareWorker`: a confluent-kafka ``ShareConsumer`` polling on its own thread (one
  instance per thread: the share consumer is not thread-safe) in explicit acknowledgement mode.
  A policy picks each record's acknowledgement (ACCEPT, RELEASE, REJECT); every poll's
  acknowledgements are sent with ``commit_sync``, and what the consumer saw is written to a
  shared :class:`Ledger`: each delivery (offset, delivery count, when) and each acknowledgement
  (when ``commit_sync`` returned, and whether the broker accepted it).
* :class:`ShareChild`: a share consumer in a child process that prints the records it receives
  as JSON lines and never acknowledges them, so that it can be killed with SIGKILL.
* raw requests (``WireClient``) for what the clients do not expose: ShareGroupHeartbeat,
  ShareFetch, ShareAcknowledge, ShareGroupDescribe, ListGroups with a type filter,
  DescribeGroups, DeleteGroups.

Times are ``time.monotonic()``, which is one clock for every process of the machine (Linux's
CLOCK_MONOTONIC), so a child's timestamps compare with the test's.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import AcknowledgeType, KafkaError, KafkaException, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

import protocol
from tests.harness import wait_until
from tests.integration.conftest import WireClient, kio_class

# ------------------------------------------------------------------------------ bookkeeping


@dataclass(frozen=True, slots=True)
class Delivery:
    consumer: str
    offset: int
    delivery_count: int
    received: float
    """``time.monotonic()`` when ``poll`` returned the record."""


@dataclass(frozen=True, slots=True)
class Ack:
    consumer: str
    offset: int
    delivery_count: int
    """The delivery count of the delivery acknowledged."""
    ack_type: int
    """``AcknowledgeType``'s value: 1 ACCEPT, 2 RELEASE, 3 REJECT."""
    sent: float
    """``time.monotonic()`` when ``commit_sync`` was called: until then the consumer surely
    holds the record."""
    committed: float
    """``time.monotonic()`` when ``commit_sync`` returned."""
    ok: bool
    """True only if ``commit_sync`` returned no error for the record's partition."""


class Ledger:
    """What every consumer of a test received and acknowledged (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        self._acks: list[Ack] = []
        self.errors: list[str] = []

    def delivered(self, delivery: Delivery) -> None:
        with self._lock:
            self._deliveries.append(delivery)

    def acknowledged(self, acks: Iterable[Ack]) -> None:
        with self._lock:
            self._acks.extend(acks)

    def error(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)

    def deliveries(self) -> list[Delivery]:
        with self._lock:
            return list(self._deliveries)

    def acks(self) -> list[Ack]:
        with self._lock:
            return list(self._acks)

    def committed_offsets(self, ack_type: int | None = None) -> set[int]:
        """Offsets whose acknowledgement the broker confirmed (of ``ack_type``, if given)."""
        return {a.offset for a in self.acks()
                if a.ok and (ack_type is None or a.ack_type == ack_type)}


Policy = Callable[[int, int], AcknowledgeType]
"""(offset, delivery count) -> how to acknowledge the record."""


def accept_all(offset: int, delivery_count: int) -> AcknowledgeType:
    return AcknowledgeType.ACCEPT


# ------------------------------------------------------------------------------ consumers


def share_config(bootstrap: str, group: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "group.id": group,
            "share.acknowledgement.mode": "explicit", "log_level": 0, **extra}


@dataclass
class ShareWorker:
    """A ShareConsumer on its own thread; see the module docstring."""

    name: str
    conf: dict[str, Any]
    topics: list[str]
    ledger: Ledger
    policy: Policy = accept_all
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> ShareWorker:
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self.thread.start()
        return self

    def _run(self) -> None:
        consumer = ShareConsumer(self.conf)
        try:
            consumer.subscribe(self.topics)
            while not self.stop.is_set():
                self._poll_once(consumer)
        except Exception as exc:  # reported by the test through the ledger
            self.ledger.error(f"{self.name}: {exc!r}")
        finally:
            try:
                consumer.close()
            except KafkaException as exc:
                self.ledger.error(f"{self.name} close: {exc!r}")

    def _poll_once(self, consumer: ShareConsumer) -> None:
        try:
            messages = consumer.poll(0.2)
        except KafkaException as exc:
            self.ledger.error(f"{self.name} poll: {exc!r}")
            return
        pending: list[tuple[int, int, int]] = []
        for msg in messages:
            error = msg.error()
            if error is not None:
                self.ledger.error(f"{self.name} message: {error}")
                continue
            offset, count = msg.offset(), msg.delivery_count()
            assert offset is not None and count is not None
            self.ledger.delivered(Delivery(self.name, offset, count, time.monotonic()))
            ack_type = self.policy(offset, count)
            consumer.acknowledge(msg, ack_type)
            pending.append((offset, count, int(ack_type)))
        if not pending:
            return
        sent = time.monotonic()
        try:
            result = consumer.commit_sync(15.0)
            ok = bool(result) and all(error is None for error in result.values())
            if not ok:
                self.ledger.error(f"{self.name} commit: {result}")
        except KafkaException as exc:
            ok = False
            self.ledger.error(f"{self.name} commit: {exc!r}")
        now = time.monotonic()
        self.ledger.acknowledged(Ack(self.name, offset, count, ack_type, sent, now, ok)
                                 for offset, count, ack_type in pending)

    def close(self, timeout: float = 20.0) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout)
            assert not self.thread.is_alive(), f"{self.name} did not close"


CHILD = r"""
import json, sys, time
from confluent_kafka import ShareConsumer
bootstrap, group, topic = sys.argv[1:4]
consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "share.acknowledgement.mode": "explicit", "log_level": 0})
consumer.subscribe([topic])
print(json.dumps({"event": "subscribed", "t": time.monotonic()}), flush=True)
while True:
    messages = [m for m in consumer.poll(0.2) if m.error() is None]
    if messages:
        now = time.monotonic()
        for m in messages:
            print(json.dumps({"event": "record", "offset": m.offset(),
                              "delivery_count": m.delivery_count(), "t": now}), flush=True)
        break
# hold the records, unacknowledged, until killed
while True:
    time.sleep(1)
"""


class ShareChild:
    """A share consumer in a child process that takes one poll's records and holds them."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, bootstrap, group, topic],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        self._lock = threading.Lock()
        self.records: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            if event["event"] == "record":
                with self._lock:
                    self.records.append(event)

    def received(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.records)

    def kill(self) -> float:
        """SIGKILL; returns when it was sent."""
        self.proc.kill()
        killed = time.monotonic()
        self.proc.wait(10)
        return killed


# ------------------------------------------------------------------------------ admin, producer


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)


_LOADING = {KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
            KafkaError.NOT_COORDINATOR}


def set_group_configs(bootstrap: str, group: str, configs: Mapping[str, str]) -> None:
    """IncrementalAlterConfigs SET on the GROUP resource (cluster metadata: answered while
    the coordinator partitions load too; retried on a retriable error)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in configs.items()])

    def altered() -> bool:
        try:
            admin.incremental_alter_configs([resource])[resource].result(10)
        except KafkaException as exc:
            error = exc.args[0]
            if error.retriable() or error.code() in _LOADING:
                return False
            raise
        return True

    wait_until(altered, 20, interval=0.1, message=f"the configs of group {group}")


def produce(bootstrap: str, topic: str, count: int, start: int = 0, partition: int = 0,
            per_flush: int | None = None) -> None:
    """``count`` records (values ``record-<n>``) with acks=all; ``per_flush`` records per
    flush (so per produce request), all at once if None."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "log_level": 0})
    step = per_flush or count
    for first in range(start, start + count, step):
        for n in range(first, min(first + step, start + count)):
            producer.produce(topic, value=f"record-{n}".encode(), partition=partition)
        assert producer.flush(15) == 0, "records left unacknowledged by the server"


# ------------------------------------------------------------------------------ the wire

AckBatch = tuple[int, int, tuple[int, ...]]
"""(first offset, last offset, acknowledge types)."""

FetchTopics = Mapping[uuid.UUID, Mapping[int, Sequence[AckBatch]]]
"""topic id -> partition -> the acknowledgements the request carries for it."""


_EARLY_ACCESS = {"share_group_heartbeat": protocol.ApiKey.SHARE_GROUP_HEARTBEAT,
                 "share_group_describe": protocol.ApiKey.SHARE_GROUP_DESCRIBE,
                 "share_fetch": protocol.ApiKey.SHARE_FETCH,
                 "share_acknowledge": protocol.ApiKey.SHARE_ACKNOWLEDGE}


def _cls(api: str, kind: str, name: str, version: int = 1) -> type[Any]:
    """kio's class; for v0 of the share APIs, the server's own (``protocol.early_access``)."""
    if version == 0 and api in _EARLY_ACCESS:
        found = protocol.schema(_EARLY_ACCESS[api], 0)
        top = found.request_type if kind == "request" else found.response_type
        cls: type[Any] = getattr(sys.modules[top.__module__], name)
        return cls
    return kio_class(api, version, kind, name)


def share_heartbeat(client: WireClient, group: str, member_id: str, epoch: int,
                    topics: list[str] | None, version: int = 1) -> Any:
    return client.request(protocol.make(
        _cls("share_group_heartbeat", "request", "ShareGroupHeartbeatRequest", version),
        group_id=group, member_id=member_id, member_epoch=epoch, rack_id=None,
        subscribed_topic_names=None if topics is None else tuple(topics)))


def share_fetch(client: WireClient, group: str, member_id: str, epoch: int,
                topics: FetchTopics, max_wait_ms: int = 0, max_records: int = 500,
                version: int = 1, max_bytes: int = 2**31 - 1,
                partition_max_bytes: int = 1 << 20) -> Any:
    """ShareFetch (a fetch waits up to ``max_wait_ms`` for records); v0 has no MaxRecords
    and a ``partition_max_bytes`` for every partition."""
    batch = _cls("share_fetch", "request", "AcknowledgementBatch", version)
    part = _cls("share_fetch", "request", "FetchPartition", version)
    topic = _cls("share_fetch", "request", "FetchTopic", version)
    return client.request(protocol.make(
        _cls("share_fetch", "request", "ShareFetchRequest", version),
        group_id=group, member_id=member_id, share_session_epoch=epoch,
        max_wait=datetime.timedelta(milliseconds=max_wait_ms), min_bytes=1,
        max_bytes=max_bytes, max_records=max_records, batch_size=max_records,
        topics=tuple(protocol.make(topic, topic_id=topic_id, partitions=tuple(
            protocol.make(part, partition_index=p, partition_max_bytes=partition_max_bytes,
                          acknowledgement_batches=tuple(
                protocol.make(batch, first_offset=f, last_offset=la, acknowledge_types=types)
                for f, la, types in acks))
            for p, acks in partitions.items()))
            for topic_id, partitions in topics.items()),
        forgotten_topics_data=()))


def share_acknowledge(client: WireClient, group: str, member_id: str, epoch: int,
                      topics: FetchTopics, version: int = 1) -> Any:
    batch = _cls("share_acknowledge", "request", "AcknowledgementBatch", version)
    part = _cls("share_acknowledge", "request", "AcknowledgePartition", version)
    topic = _cls("share_acknowledge", "request", "AcknowledgeTopic", version)
    return client.request(protocol.make(
        _cls("share_acknowledge", "request", "ShareAcknowledgeRequest", version),
        group_id=group, member_id=member_id, share_session_epoch=epoch,
        topics=tuple(protocol.make(topic, topic_id=topic_id, partitions=tuple(
            protocol.make(part, partition_index=p, acknowledgement_batches=tuple(
                protocol.make(batch, first_offset=f, last_offset=la, acknowledge_types=types)
                for f, la, types in acks))
            for p, acks in partitions.items()))
            for topic_id, partitions in topics.items())))


def share_group_describe(bootstrap: str, group: str, version: int = 1) -> Any:
    """The group's entry of a ShareGroupDescribe response."""
    with WireClient(bootstrap) as client:
        [described] = client.request(protocol.make(
            _cls("share_group_describe", "request", "ShareGroupDescribeRequest", version),
            group_ids=(group,), include_authorized_operations=False)).groups
    return described


def assigned_members(bootstrap: str, group: str) -> dict[str, dict[str, tuple[int, ...]]]:
    """member id -> topic name -> partitions, from ShareGroupDescribe (empty if the group is
    not found)."""
    described = share_group_describe(bootstrap, group)
    if described.error_code != 0:
        return {}
    return {m.member_id: {tp.topic_name: tuple(tp.partitions)
                          for tp in m.assignment.topic_partitions}
            for m in described.members}


def list_groups(bootstrap: str, types: tuple[str, ...] = ()) -> Any:
    with WireClient(bootstrap) as client:
        return client.request(protocol.make(
            _cls("list_groups", "request", "ListGroupsRequest", 5),
            states_filter=(), types_filter=types))


def describe_groups(bootstrap: str, group: str) -> Any:
    with WireClient(bootstrap) as client:
        [described] = client.request(protocol.make(
            _cls("describe_groups", "request", "DescribeGroupsRequest", 6),
            groups=(group,), include_authorized_operations=False)).groups
    return described


def delete_groups(bootstrap: str, group: str) -> int:
    """The group's error code in a DeleteGroups v2 response."""
    with WireClient(bootstrap) as client:
        [result] = client.request(protocol.make(
            _cls("delete_groups", "request", "DeleteGroupsRequest", 2),
            groups_names=(group,))).results
    return int(result.error_code)
