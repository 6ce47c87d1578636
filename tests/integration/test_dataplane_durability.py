"""kill -9 of the server in the middle of acks=-1 produces loses no acknowledged record."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness import ServerProcess, wait_until

TOPIC = "durable"


def read_all(bootstrap: str, partitions: int, expected: int) -> set[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "durability",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
    values: set[bytes] = set()
    deadline = time.monotonic() + 20
    idle_since = time.monotonic()
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                if len(values) >= expected and time.monotonic() - idle_since > 1.0:
                    break
                continue
            error = msg.error()
            if error is None:
                value = msg.value()
                assert value is not None  # every record produced here has a value
                values.add(value)
                idle_since = time.monotonic()
            else:
                assert error.code() == KafkaError._PARTITION_EOF, error
    finally:
        consumer.close()
    return values


@pytest.mark.slow
def test_kill_9_loses_no_acknowledged_record(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(10)
        producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all",
                             "linger.ms": 2, "message.timeout.ms": 3000,
                             "reconnect.backoff.max.ms": 200})
        acked: set[bytes | None] = set()

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                acked.add(msg.value())

        sent = 0
        deadline = time.monotonic() + 20
        while len(acked) < 3000 and time.monotonic() < deadline:
            producer.produce(TOPIC, value=b"record-%d" % sent, on_delivery=delivered)
            sent += 1
            producer.poll(0)
            if sent % 500 == 0:
                producer.poll(0.01)
        server.kill()  # SIGKILL while records are in flight
        producer.flush(10)
        acknowledged = set(acked)
        assert len(acknowledged) >= 3000
    finally:
        server.kill()
    restarted = ServerProcess(tmp_path / "data").start()
    try:
        wait_until(lambda: restarted.alive(), 5)
        stored = read_all(restarted.bootstrap, 2, len(acknowledged))
        assert acknowledged <= stored, f"lost {len(acknowledged - stored)} acked records"
    finally:
        restarted.stop()
        restarted.kill()
