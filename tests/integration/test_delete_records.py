"""DeleteRecords from real admin clients: the low watermark moves, a consumer starting from the
earliest offset starts there, a fetch below it is out of range, and it survives kill -9."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.errors import OffsetOutOfRangeError

from tests.harness import ServerProcess


def produce(server: ServerProcess, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": server.bootstrap})
    for i in range(count):
        producer.produce(topic, b"value-%d" % i, partition=0)
    assert producer.flush(15) == 0


def watermarks(server: ServerProcess, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low), int(high)
    finally:
        consumer.close()


def first_consumed(server: ServerProcess, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": server.bootstrap,
                         "group.id": f"from-earliest-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                offset = message.offset()
                assert offset is not None
                return offset
        raise AssertionError("nothing consumed")
    finally:
        consumer.close()


@pytest.mark.slow
def test_delete_records_moves_the_low_watermark_durably(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", {}).start()
    try:
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        topic = f"purged-{uuid.uuid4().hex[:6]}"
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
        produce(server, topic, 10)
        [done] = admin.delete_records([TopicPartition(topic, 0, 4)]).values()
        assert done.result(10).low_watermark == 4
        assert watermarks(server, topic) == (4, 10)
        assert first_consumed(server, topic) == 4
        # kafka-python's admin moves it further; a request below it changes nothing
        kp = KafkaAdminClient(bootstrap_servers=server.bootstrap)
        try:
            answer = kp.delete_records({KafkaTopicPartition(topic, 0): 7})
            assert answer[KafkaTopicPartition(topic, 0)]["low_watermark"] == 7
            answer = kp.delete_records({KafkaTopicPartition(topic, 0): 2})
            assert answer[KafkaTopicPartition(topic, 0)]["low_watermark"] == 7
        finally:
            kp.close()
        # past the high watermark: OFFSET_OUT_OF_RANGE
        [beyond] = admin.delete_records([TopicPartition(topic, 0, 11)]).values()
        try:
            beyond.result(10)
            raise AssertionError("an offset past the high watermark was accepted")
        except Exception as exc:  # confluent-kafka raises KafkaException with the error
            assert "OFFSET_OUT_OF_RANGE" in repr(exc) or "out of range" in str(exc).lower()
        server.restart()  # SIGKILL, then the same store
        assert watermarks(server, topic) == (7, 10)
        assert first_consumed(server, topic) == 7
        # a fetch below the log start: OFFSET_OUT_OF_RANGE (no reset policy to hide it)
        below = KafkaConsumer(bootstrap_servers=server.bootstrap,
                              auto_offset_reset="none")  # type: ignore[arg-type]  # served, untyped
        try:
            partition = KafkaTopicPartition(topic, 0)
            below.assign([partition])
            below.seek(partition, 2)
            with pytest.raises(OffsetOutOfRangeError):
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:
                    below.poll(timeout_ms=500)
        finally:
            below.close()
    finally:
        server.stop()
        server.kill()
