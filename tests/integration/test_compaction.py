"""Compacted data topics with a real producer and consumer (confluent-kafka): keys overwritten
and deleted, read back after cleaning with only the latest value per key, tombstones gone after
delete.retention.ms, offsets (and their gaps) kept, ListOffsets earliest unchanged, the same
after kill -9; and segment.ms rolling a segment so it can be cleaned."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType

from tests.harness import ServerProcess, wait_until
from tests.integration.test_admin_confluent import TIMEOUT, admin_for, unique
from tests.integration.test_topic_configs import alter, new_topic, op

KEYS = [b"k%d" % i for i in range(8)]
DELETED = KEYS[:3]

Message = tuple[int, bytes | None, bytes | None]  # offset, key, value


def produce(server: ServerProcess, topic: str, entries: list[tuple[bytes, bytes | None]]) -> None:
    """One batch per record (each flushed), so the records spread over many segments."""
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 0})
    for key, value in entries:
        producer.produce(topic, key=key, value=value)
        assert producer.flush(TIMEOUT) == 0


def read_all(server: ServerProcess, topic: str) -> list[Message]:
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": unique("read"),
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)
        consumer.assign([TopicPartition(topic, 0, 0)])
        out: list[Message] = []
        deadline = time.monotonic() + TIMEOUT
        while (not out or out[-1][0] < high - 1) and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                out.append((int(message.offset() or 0), message.key(), message.value()))
        return out
    finally:
        consumer.close()


def earliest(server: ServerProcess, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": unique("w")})
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)
        return int(low)
    finally:
        consumer.close()


def latest_per_key(written: list[Message]) -> dict[bytes | None, Message]:
    return {key: (offset, key, value) for offset, key, value in written}


@pytest.mark.slow
def test_compacted_topic_keeps_the_latest_value_per_key(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", {"log.cleaner.backoff.ms": "100"}).start() as server:
        admin = admin_for(server)
        topic = new_topic(admin, {"cleanup.policy": "compact", "segment.bytes": "300",
                                  "min.cleanable.dirty.ratio": "0.01",
                                  "delete.retention.ms": "86400000"})
        entries: list[tuple[bytes, bytes | None]] = [
            (key, b"v%d-%s" % (round_, key)) for round_ in range(3) for key in KEYS]
        entries += [(key, None) for key in DELETED]
        entries.append((b"active", b"x" * 400))  # alone in the active segment, never cleaned
        produce(server, topic, entries)
        written: list[Message] = [(i, key, value) for i, (key, value) in enumerate(entries)]
        expected = sorted(latest_per_key(written).values())
        assert len(expected) == len(KEYS) + 1

        def cleaned() -> bool:
            return read_all(server, topic) == expected

        wait_until(cleaned, timeout=TIMEOUT)  # tombstones too: delete.retention.ms is a day
        assert earliest(server, topic) == 0  # the first segment keeps its base offset
        [refused] = admin.delete_records([TopicPartition(topic, 0, 2)]).values()
        with pytest.raises(KafkaException) as policy:  # compact only: no DeleteRecords
            refused.result(TIMEOUT)
        assert policy.value.args[0].code() == KafkaError.POLICY_VIOLATION

        # kill -9: what the cleaner left is what a reader sees after a restart
        server.restart()
        assert read_all(server, topic) == expected

        alter(admin, topic, op("delete.retention.ms", AlterConfigOpType.SET, "1"))
        without_tombstones = [m for m in expected if m[2] is not None]
        wait_until(lambda: read_all(server, topic) == without_tombstones, timeout=TIMEOUT)
        assert earliest(server, topic) == 0


@pytest.mark.slow
def test_segment_ms_rolls_the_segment_so_it_is_cleaned(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", {"log.cleaner.backoff.ms": "100"}).start() as server:
        topic = new_topic(admin_for(server), {"cleanup.policy": "compact,delete",
                                              "segment.ms": "300",
                                              "min.cleanable.dirty.ratio": "0.01"})
        produce(server, topic, [(b"a", b"1"), (b"a", b"2"), (b"b", b"1")])
        time.sleep(0.4)  # segment.ms passes: the next append rolls the segment
        produce(server, topic, [(b"c", b"1")])
        wait_until(lambda: read_all(server, topic) == [(1, b"a", b"2"), (2, b"b", b"1"),
                                                       (3, b"c", b"1")], timeout=TIMEOUT)
