"""DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets over TCP
against a real server, as raw requests, with confluent-kafka's ShareConsumer (librdkafka 2.16)
making and consuming the share state: the start offset of an empty group is altered and a
consumer receives from there; Kafka's errors; the state after a restart."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic

import protocol
from protocol import ApiKey, ErrorCode
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, api_versions_v0, kio_class

TIMEOUT = 10.0
ZERO = uuid.UUID(int=0)


def no_id(topic_id: uuid.UUID | None) -> bool:
    """Kafka's zero topic id (which the codec reads back as None)."""
    return topic_id is None or topic_id == ZERO


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# ------------------------------------------------------------------------------ raw requests
def describe_request(version: int, group_id: str,
                     topics: dict[str, list[int]] | None) -> Any:
    def cls(name: str) -> type[Any]:
        return kio_class("describe_share_group_offsets", version, "request", name)

    entries = None if topics is None else tuple(
        protocol.make(cls("DescribeShareGroupOffsetsRequestTopic"), topic_name=name,
                      partitions=tuple(parts)) for name, parts in topics.items())
    return protocol.make(cls("DescribeShareGroupOffsetsRequest"), groups=(
        protocol.make(cls("DescribeShareGroupOffsetsRequestGroup"), group_id=group_id,
                      topics=entries),))


def alter_request(group_id: str, topics: dict[str, dict[int, int]]) -> Any:
    def cls(name: str) -> type[Any]:
        return kio_class("alter_share_group_offsets", 0, "request", name)

    return protocol.make(cls("AlterShareGroupOffsetsRequest"), group_id=group_id, topics=tuple(
        protocol.make(cls("AlterShareGroupOffsetsRequestTopic"), topic_name=name,
                      partitions=tuple(
                          protocol.make(cls("AlterShareGroupOffsetsRequestPartition"),
                                        partition_index=p, start_offset=offset)
                          for p, offset in parts.items()))
        for name, parts in topics.items()))


def delete_request(group_id: str, topics: list[str]) -> Any:
    def cls(name: str) -> type[Any]:
        return kio_class("delete_share_group_offsets", 0, "request", name)

    return protocol.make(cls("DeleteShareGroupOffsetsRequest"), group_id=group_id, topics=tuple(
        protocol.make(cls("DeleteShareGroupOffsetsRequestTopic"), topic_name=name)
        for name in topics))


def answer(server: ServerProcess, body: Any, retry: tuple[ErrorCode, ...] = ()) -> Any:
    """The response to ``body`` on a fresh connection; sent again while the top-level (or
    first group's) error is COORDINATOR_LOAD_IN_PROGRESS or one of ``retry``."""
    again = (ErrorCode.coordinator_load_in_progress, *retry)

    def error_of(response: Any) -> ErrorCode:
        groups = getattr(response, "groups", None)
        return ErrorCode(groups[0].error_code if groups else response.error_code)

    with WireClient(server.bootstrap, timeout=TIMEOUT) as wire:
        deadline = time.monotonic() + 15
        while True:
            response = wire.request(body)
            if error_of(response) not in again or time.monotonic() > deadline:
                return response
            time.sleep(0.1)


def described(server: ServerProcess, group_id: str, topics: dict[str, list[int]] | None = None,
              version: int = 1) -> dict[tuple[str, int], tuple[int, ...]]:
    """(topic, partition) -> (start offset, leader epoch[, lag in v1]) of a group's offsets."""
    response = answer(server, describe_request(version, group_id, topics))
    [group] = response.groups
    assert (group.group_id, group.error_code) == (group_id, ErrorCode.none)
    out: dict[tuple[str, int], tuple[int, ...]] = {}
    for topic in group.topics:
        for p in topic.partitions:
            assert p.error_code == ErrorCode.none
            values = (p.start_offset, p.leader_epoch) + ((p.lag,) if version >= 1 else ())
            out[(topic.topic_name, p.partition_index)] = values
    return out


# ------------------------------------------------------------------------------ clients
def create_topic(server: ServerProcess, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(TIMEOUT)


def produce(server: ServerProcess, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, value=f"record-{i}".encode(), partition=0)
    assert producer.flush(TIMEOUT) == 0


def share_consumer(server: ServerProcess, group_id: str, topic: str) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": server.bootstrap, "group.id": group_id,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    return consumer


def receive(consumer: ShareConsumer, count: int, timeout: float = 20.0) -> list[int]:
    """The offsets of the next ``count`` records, each acknowledged (ACCEPT) and committed."""
    offsets: list[int] = []
    deadline = time.monotonic() + timeout
    while len(offsets) < count and time.monotonic() < deadline:
        for message in consumer.poll(0.5):
            offset = message.offset()
            if message.error() is None and offset is not None:
                offsets.append(offset)
                consumer.acknowledge(message)
        consumer.commit_sync(TIMEOUT)
    return offsets


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("share-offsets") / "data") as process:
        yield process


# ------------------------------------------------------------------------------ tests
def test_the_three_apis_are_advertised(server: ServerProcess) -> None:
    with WireClient(server.bootstrap) as wire:
        versions = {k.api_key: (k.min_version, k.max_version)
                    for k in wire.request(api_versions_v0()).api_keys}
    assert versions[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS] == (0, 1)
    assert versions[ApiKey.ALTER_SHARE_GROUP_OFFSETS] == (0, 0)
    assert versions[ApiKey.DELETE_SHARE_GROUP_OFFSETS] == (0, 0)


@pytest.mark.slow
def test_an_altered_start_offset_is_where_a_share_consumer_receives_from(
        server: ServerProcess) -> None:
    topic, group = unique("jobs"), unique("workers")
    create_topic(server, topic, 1)
    produce(server, topic, 10)

    altered = answer(server, alter_request(group, {topic: {0: 3}}))
    assert (altered.error_code, altered.error_message) == (ErrorCode.none, None)
    [answered] = altered.responses
    assert answered.topic_name == topic and not no_id(answered.topic_id)
    assert [(p.partition_index, p.error_code) for p in answered.partitions] == [
        (0, ErrorCode.none)]
    # a fresh share state: leader epoch -1 until written; lag = 10 - 3 - 0
    assert described(server, group) == {(topic, 0): (3, -1, 7)}
    assert described(server, group, {topic: [0]}, version=0) == {(topic, 0): (3, -1)}

    consumer = share_consumer(server, group, topic)
    try:
        assert receive(consumer, 7) == list(range(3, 10))
        assert described(server, group) == {(topic, 0): (10, 0, 0)}
        busy = answer(server, alter_request(group, {topic: {0: 0}}))
        assert (busy.error_code, busy.responses) == (ErrorCode.non_empty_group, ())
        busy = answer(server, delete_request(group, [topic]))
        assert busy.error_code == ErrorCode.non_empty_group
    finally:
        consumer.close()

    # the consumer left: the group is empty again (its leave may take a moment)
    again = answer(server, alter_request(group, {topic: {0: 5}}),
                   retry=(ErrorCode.non_empty_group,))
    assert again.error_code == ErrorCode.none
    assert described(server, group) == {(topic, 0): (5, -1, 5)}
    consumer = share_consumer(server, group, topic)
    try:
        assert receive(consumer, 5) == list(range(5, 10))
    finally:
        consumer.close()

    deleted = answer(server, delete_request(group, [topic]),
                     retry=(ErrorCode.non_empty_group,))
    assert deleted.error_code == ErrorCode.none
    assert [(t.topic_name, not no_id(t.topic_id), t.error_code) for t in deleted.responses] == [
        (topic, True, ErrorCode.none)]
    assert described(server, group) == {}
    assert described(server, group, {topic: [0]}) == {(topic, 0): (-1, 0, -1)}


def test_kafkas_errors(server: ServerProcess) -> None:
    topic, group = unique("errors"), unique("group")
    create_topic(server, topic, 2)

    for body in (alter_request("", {topic: {0: 0}}), delete_request("", [topic])):
        refused = answer(server, body)
        assert (refused.error_code, refused.responses) == (ErrorCode.invalid_group_id, ())
    missing = answer(server, delete_request(group, [topic]))
    assert (missing.error_code, missing.error_message) == (
        ErrorCode.group_id_not_found, f"Group {group} not found.")

    altered = answer(server, alter_request(group, {topic: {0: 1, 5: 1}, "no-such": {0: 1}}))
    assert altered.error_code == ErrorCode.none
    assert [(t.topic_name, no_id(t.topic_id),
             [(p.partition_index, p.error_code) for p in t.partitions])
            for t in altered.responses] == [
        ("no-such", True, [(0, ErrorCode.unknown_topic_or_partition)]),
        (topic, False, [(0, ErrorCode.none), (5, ErrorCode.unknown_topic_or_partition)]),
    ]
    response = answer(server, describe_request(1, group, {"no-such": [0], topic: [0, 1]}))
    [found] = response.groups
    assert [(t.topic_name, no_id(t.topic_id),
             [(p.partition_index, p.start_offset, p.lag, p.error_code) for p in t.partitions])
            for t in found.topics] == [
        (topic, False, [(0, 1, -1, ErrorCode.none), (1, -1, -1, ErrorCode.none)]),
        ("no-such", True, [(0, -1, -1, ErrorCode.none)]),
    ]
    assert described(server, group, {}) == {}  # an empty topic list reads nothing

    other = unique("other")
    create_topic(server, other, 1)
    deleted = answer(server, delete_request(group, [other, "no-such", topic]))
    assert [(t.topic_name, t.error_code, t.error_message) for t in deleted.responses] == [
        (topic, ErrorCode.none, None),
        (other, ErrorCode.unknown_topic_or_partition, "There is no offset information to delete."),
        ("no-such", ErrorCode.unknown_topic_or_partition,
         "This server does not host this topic-partition."),
    ]


@pytest.mark.slow
def test_altered_offsets_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    topic, group = unique("durable"), unique("group")
    with ServerProcess(data) as first:
        create_topic(first, topic, 2)
        altered = answer(first, alter_request(group, {topic: {0: 4, 1: 8}}))
        assert altered.error_code == ErrorCode.none
        before = described(first, group)
    assert before == {(topic, 0): (4, -1, -4), (topic, 1): (8, -1, -8)}
    with ServerProcess(data) as second:
        wait_until(lambda: described(second, group) == before, timeout=TIMEOUT,
                   message="the altered offsets after the restart")
        deleted = answer(second, delete_request(group, [topic]))
        assert deleted.error_code == ErrorCode.none
        assert described(second, group) == {}
