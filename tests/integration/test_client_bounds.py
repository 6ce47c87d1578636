"""What one client may make the server hold.

- A connection's requests in handling add up to at most ``socket.request.max.bytes``: the next
  frame is read once earlier ones are answered (as Kafka mutes a channel), so a client
  pipelining large requests gets every answer, in order, and never more than that many bytes
  of its requests held at once.
- A consumer group holds at most ``group.consumer.max.size`` members: one more gets
  GROUP_MAX_SIZE_REACHED, which librdkafka reports as fatal, and the group goes on.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import protocol
from protocol import ErrorCode
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, kio_class

MAX_BYTES = 16 * 1024
DELAY_MS = 1000  # a new classic group's JoinGroup is answered this long after it arrives
CONFIG = {"socket.request.max.bytes": str(MAX_BYTES),
          "group.initial.rebalance.delay.ms": str(DELAY_MS)}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "data", CONFIG).start()
    try:
        process.wait_loaded()
        yield process
    finally:
        process.stop()
        process.kill()


def join_request(group: str, metadata_bytes: int) -> object:
    """JoinGroup v3 (no member id round trip): held until the group's join phase ends."""
    return protocol.make(
        kio_class("join_group", 3, "request", "JoinGroupRequest"), group_id=group,
        session_timeout=datetime.timedelta(seconds=30),
        rebalance_timeout=datetime.timedelta(seconds=30), member_id="", protocol_type="consumer",
        protocols=(protocol.make(kio_class("join_group", 3, "request", "JoinGroupRequestProtocol"),
                                 name="range", metadata=b"\0" * metadata_bytes),))


def pipelined_joins(bootstrap: str, sizes: list[int], prefix: str) -> list[float]:
    """Send JoinGroups of new groups with metadata of ``sizes`` bytes back to back on one
    connection; the seconds from sending to each answer."""
    with WireClient(bootstrap, timeout=20) as client:
        started = time.monotonic()
        for n, size in enumerate(sizes):
            client.send(join_request(f"{prefix}-{n}", size))
        answered = []
        for _ in sizes:
            _, response = client.recv(11, 3)
            assert response.error_code == ErrorCode.none, response
            answered.append(time.monotonic() - started)
    return answered


@pytest.mark.slow
def test_a_connections_requests_in_handling_stay_within_socket_request_max_bytes(
        server: ServerProcess) -> None:
    results: dict[str, list[float]] = {}
    big = MAX_BYTES * 6 // 10  # two of them do not fit together
    threads = [
        threading.Thread(target=lambda: results.update(
            fits=pipelined_joins(server.bootstrap, [big, 200], "fits"))),
        threading.Thread(target=lambda: results.update(
            waits=pipelined_joins(server.bootstrap, [big, big], "waits"))),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    delay = DELAY_MS / 1000
    # a small request next to a large one is read at once: both join phases run together
    first, second = results["fits"]
    assert first >= delay * 0.9 and second - first < delay / 2, results
    # a second large one is read only once the first was answered: its join phase starts then
    first, second = results["waits"]
    assert first >= delay * 0.9 and second - first >= delay * 0.9, results
    assert server.alive()


@pytest.mark.slow
def test_a_member_beyond_group_consumer_max_size_is_refused(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", {"group.consumer.max.size": "2"},
                           profile="test").start()
    consumers: list[confluent_kafka.Consumer] = []
    try:
        server.wait_loaded()
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        admin.create_topics([NewTopic("bounded", 4, 1)])["bounded"].result(10)
        for _ in range(3):
            consumer = confluent_kafka.Consumer({
                "bootstrap.servers": server.bootstrap, "group.id": "bounded",
                "group.protocol": "consumer"})
            consumer.subscribe(["bounded"])
            consumers.append(consumer)
        errors: dict[int, confluent_kafka.KafkaError] = {}

        def settled() -> bool:
            for n, consumer in enumerate(consumers):
                message = None if n in errors else consumer.poll(0.05)
                error = None if message is None else message.error()
                if error is not None:
                    errors[n] = error
            owned = sorted(len(c.assignment()) for n, c in enumerate(consumers)
                           if n not in errors)
            return len(errors) == 1 and owned == [2, 2]

        wait_until(settled, 30, interval=0, message="two members sharing the partitions and "
                   "the third refused")
        [(refused, error)] = errors.items()
        assert error.code() == confluent_kafka.KafkaError._FATAL, error  # not retried
        assert "maximum size" in error.str(), error
        assert consumers[refused].assignment() == []
        assert server.alive()
    finally:
        for consumer in consumers:
            consumer.close()
        server.stop()
        server.kill()
