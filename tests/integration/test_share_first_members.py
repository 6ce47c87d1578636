"""The first members of a new share group, under seed 000's defaults (assignment interval 1 s,
offload on): two implicit-mode confluent-kafka ``ShareConsumer``s subscribing within 50 ms of
each other to a 4-partition topic holding 400 records both get records, rather than the first
taking all 400 while the second waits for the next assignment interval.
"""

from __future__ import annotations

import threading
from pathlib import Path

from confluent_kafka import ShareConsumer

from tests.harness import ServerProcess, wait_until
from tests.integration.share_clients import create_topic, produce, set_group_configs

TOPIC = "first-members"
GROUP = "first-members-group"
PARTITIONS = 4
PER_PARTITION = 100


class Poller:
    """An implicit-mode ShareConsumer (the default mode) polling on its own thread: each poll
    acknowledges the previous poll's records as accepted."""

    def __init__(self, bootstrap: str) -> None:
        self.conf = {"bootstrap.servers": bootstrap, "group.id": GROUP, "log_level": 0}
        self.offsets: list[tuple[int | None, int | None]] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        consumer = ShareConsumer(self.conf)
        try:
            consumer.subscribe([TOPIC])
            while not self.stop.is_set():
                for message in consumer.poll(0.1):
                    if message.error() is not None:
                        self.errors.append(str(message.error()))
                    else:
                        self.offsets.append((message.partition(), message.offset()))
        except Exception as exc:  # reported by the test
            self.errors.append(repr(exc))
        finally:
            consumer.close()


def test_two_share_consumers_joining_together_both_get_records(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data").start()  # the server's defaults: seed 000's
    pollers: list[Poller] = []
    try:
        bootstrap = server.bootstrap
        create_topic(bootstrap, TOPIC, PARTITIONS)
        set_group_configs(bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})
        for partition in range(PARTITIONS):
            produce(bootstrap, TOPIC, PER_PARTITION, partition=partition)
        pollers = [Poller(bootstrap), Poller(bootstrap)]
        for poller in pollers:
            poller.thread.start()
        total = PARTITIONS * PER_PARTITION
        wait_until(lambda: sum(len(p.offsets) for p in pollers) >= total, 60, interval=0.1,
                   message="every record delivered")
        counts = [len(p.offsets) for p in pollers]
        assert all(count > 0 for count in counts), counts
        delivered = [o for p in pollers for o in p.offsets]
        assert len(set(delivered)) == total
    finally:
        for poller in pollers:
            poller.stop.set()
        for poller in pollers:
            poller.thread.join(20)
        assert all(p.errors == [] for p in pollers), [p.errors for p in pollers]
        server.stop()
