"""A full store: the server runs with a small ``coordinator.log.max.bytes`` and commits are sent
until writes fail. Clients get errors (NOT_COORDINATOR, which they retry), the server stays up
and keeps answering, and after a restart nothing acknowledged before is lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from protocol import ErrorCode
from tests.harness import ServerProcess
from tests.integration.conftest import WireClient, metadata_request
from tests.integration.test_offsets_durability import (
    TOPIC,
    TOPIC_PARTITIONS,
    Acked,
    assert_all_committed,
    ck_commit,
    create_topics,
    kp_commit,
    wire_offset_commit,
    wire_offset_fetch,
)

CAP = 64 * 1024
CONFIG = {
    "offsets.topic.num.partitions": "3",
    "coordinator.log.max.bytes": str(CAP),
}


@pytest.fixture
def full_servers(tmp_path: Path) -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    try:
        yield started
    finally:
        for process in started:
            process.stop()
            process.kill()


def store_bytes(log_dir: Path) -> int:
    return sum(p.stat().st_size for p in log_dir.glob("__consumer_offsets-*/*.log"))


def assert_committed_on_the_wire(bootstrap: str, acked: Acked) -> None:
    """Every acknowledged offset, fetched with OffsetFetch v8 over one connection (many groups:
    a client per group would be slow)."""
    by_group: dict[str, dict[int, int]] = {}
    for (group, _topic, partition), offset in acked.items():
        by_group.setdefault(group, {})[partition] = offset
    with WireClient(bootstrap) as client:
        for group, expected in by_group.items():
            result = wire_offset_fetch(bootstrap, group, sorted(expected), client)
            assert result.error_code == 0, (group, result)
            got = {p.partition_index: p.committed_offset for p in result.topics[0].partitions}
            assert got == expected, f"group {group}: fetched {got}, acknowledged {expected}"


def fill(bootstrap: str, acked: Acked) -> tuple[int, dict[ErrorCode, int]]:
    """Commit new groups' offsets until commits fail, then a few more; returns the number of
    accepted commits and the errors seen."""
    errors: dict[ErrorCode, int] = {}
    accepted = 0
    failures = 0
    with WireClient(bootstrap, timeout=10) as client:
        for i in range(5_000):
            group = f"fill-{i}"
            offsets = {p: 10 * i + p for p in range(TOPIC_PARTITIONS)}
            result = wire_offset_commit(client, group, offsets)
            if set(result.values()) == {ErrorCode.none}:
                assert failures == 0, "a commit succeeded after the store was full"
                acked.update({(group, TOPIC, p): o for p, o in offsets.items()})
                accepted += 1
                continue
            assert len(set(result.values())) == 1, result  # a batch fails whole
            [code] = set(result.values())
            errors[code] = errors.get(code, 0) + 1
            failures += 1
            if failures == 20:  # groups on every coordinator partition, all refused
                break
        # then the smallest batches there are, until they do not fit either: now no commit fits
        for i in range(1_000):
            result = wire_offset_commit(client, "z", {0: i})
            if result == {0: ErrorCode.none}:
                acked[("z", TOPIC, 0)] = i
                accepted += 1
                continue
            errors[result[0]] = errors.get(result[0], 0) + 1
            break
    return accepted, errors


@pytest.mark.slow
def test_a_full_store_refuses_writes_keeps_serving_and_loses_nothing(
        tmp_path: Path, full_servers: list[ServerProcess]) -> None:
    log_dir = tmp_path / "data"
    server = ServerProcess(log_dir, CONFIG).start()
    full_servers.append(server)
    create_topics(server.bootstrap, {TOPIC: TOPIC_PARTITIONS})
    acked: Acked = {}
    for g in range(6):  # real clients first
        commit = ck_commit if g % 2 else kp_commit
        commit(server.bootstrap, f"client-{g}",
               {(TOPIC, p): 100 * g + p for p in range(TOPIC_PARTITIONS)}, acked)

    accepted, errors = fill(server.bootstrap, acked)
    assert accepted > 50, "the cap should allow some commits"
    assert errors == {ErrorCode.not_coordinator: 21}
    assert store_bytes(log_dir) <= CAP

    # a real client's commit fails too (after its retries), it is not acknowledged
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": server.bootstrap, "group.id": "client-late",
        "enable.auto.commit": False})
    try:
        with pytest.raises(confluent_kafka.KafkaException):
            result = consumer.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, 0, 5)],
                                     asynchronous=False)
            # librdkafka may report the error per partition instead of raising
            errors_in_result = [tp.error for tp in result or () if tp.error is not None]
            if errors_in_result:
                raise confluent_kafka.KafkaException(errors_in_result[0])
    finally:
        consumer.close()
    kp = KafkaConsumer(bootstrap_servers=server.bootstrap, group_id="client-late-kp",
                       enable_auto_commit=False, request_timeout_ms=5000)
    try:
        kp.assign([TopicPartition(TOPIC, 0)])
        with pytest.raises(KafkaError):
            kp.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(5, "", -1)},
                      timeout_ms=2000)
    finally:
        kp.close(autocommit=False)

    # the server is up and answers: metadata, and reads of what it acknowledged
    assert server.alive()
    with WireClient(server.bootstrap) as client:
        metadata = client.request(metadata_request(12, [TOPIC]))
        [topic] = metadata.topics
        assert topic.error_code == 0 and len(topic.partitions) == TOPIC_PARTITIONS
    fetched = wire_offset_fetch(server.bootstrap, "fill-0", [0, 1])
    assert fetched.error_code == 0
    assert [p.committed_offset for p in fetched.topics[0].partitions] == [0, 1]
    assert_all_committed(server.bootstrap, {k: v for k, v in acked.items()
                                            if k[0].startswith("client-")})

    # after a crash and a restart, everything acknowledged is there; the store is still full
    server.kill()
    server = ServerProcess(log_dir, CONFIG).start()
    full_servers.append(server)
    assert_all_committed(server.bootstrap, {k: v for k, v in acked.items()
                                            if not k[0].startswith("fill-")})
    assert_committed_on_the_wire(server.bootstrap, acked)
    with WireClient(server.bootstrap) as client:
        assert set(wire_offset_commit(client, "after-restart", {0: 1}).values()) == {
            ErrorCode.not_coordinator}
    assert server.alive()
