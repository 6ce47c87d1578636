"""DescribeLogDirs and DescribeProducers from kafka-python's admin client."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient, TopicPartition

from tests.harness import ServerProcess


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "data", {}).start().wait_loaded()
    try:
        yield process
    finally:
        process.stop()
        process.kill()


def test_describe_log_dirs_gives_each_partitions_size(server: ServerProcess) -> None:
    topic = f"sized-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": server.bootstrap})
    for _ in range(50):
        producer.produce(topic, b"x" * 100, partition=0)
    assert producer.flush(15) == 0
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        # a group's FindCoordinator creates __consumer_offsets, as in Kafka
        admin.list_group_offsets(f"sizer-{uuid.uuid4().hex[:6]}")
        answer = admin.describe_log_dirs()
    finally:
        admin.close()
    [broker] = answer
    [log_dir] = broker["log_dirs"]
    assert log_dir["error_code"] == 0
    assert log_dir["log_dir"] == str(server.log_dir.resolve())
    sizes = {(t["name"], p["partition_index"]): p["partition_size"]
             for t in log_dir["topics"] for p in t["partitions"]}
    assert sizes[(topic, 0)] > 50 * 100
    assert sum(1 for name, _ in sizes if name == "__consumer_offsets") == 50
    assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0


@pytest.mark.slow
def test_describe_producers_lists_an_idempotent_producer(server: ServerProcess) -> None:
    topic = f"produced-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": server.bootstrap, "enable.idempotence": True})
    for i in range(5):
        producer.produce(topic, b"v%d" % i, partition=0)
    assert producer.flush(15) == 0
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        states = admin.describe_producers([TopicPartition(topic, 0)])
    finally:
        admin.close()
    [state] = states.values()
    [active] = state.active_producers
    assert active.producer_id >= 0 and active.producer_epoch >= 0
    assert active.last_sequence == 4 and active.current_transaction_start_offset == -1
