"""ShareFetch's limits with confluent-kafka's ``ShareConsumer`` over TCP: ``fetch.max.bytes=0``
(ShareFetch MaxBytes 0) gets no records, as from Kafka, while a default consumer of the same
group then gets them all."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import ShareConsumer

from tests.harness import ServerProcess, wait_until
from tests.integration.share_clients import create_topic, produce, set_group_configs

TOPIC = "limits"
GROUP = "limits-group"


@pytest.mark.slow
def test_fetch_max_bytes_zero_gets_no_records(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data").start()
    try:
        bootstrap = server.bootstrap
        create_topic(bootstrap, TOPIC)
        set_group_configs(bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})
        produce(bootstrap, TOPIC, 5)
        conf = {"bootstrap.servers": bootstrap, "group.id": GROUP, "log_level": 0}
        starved = ShareConsumer({**conf, "fetch.max.bytes": 0})
        starved.subscribe([TOPIC])
        got: list[int] = []
        polls = 0

        def polled_a_while() -> bool:
            nonlocal polls
            got.extend(m.offset() or 0 for m in starved.poll(0.2) if m.error() is None)
            polls += 1
            return polls >= 30  # several fetch rounds, each waiting MaxWaitMs on the server
        wait_until(polled_a_while, 60, interval=0, message="30 polls")
        assert got == []
        starved.close()
        fed = ShareConsumer(conf)
        fed.subscribe([TOPIC])
        received: list[int] = []

        def all_received() -> bool:
            received.extend(m.offset() or 0 for m in fed.poll(0.2) if m.error() is None)
            return len(received) >= 5
        wait_until(all_received, 60, interval=0, message="the records, by a default consumer")
        fed.close()
        assert sorted(received) == [0, 1, 2, 3, 4]
    finally:
        server.stop()
