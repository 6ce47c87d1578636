"""The first members of a new share group, under seed 000's defaults (assignment interval 1 s,
offload on): two implicit-mode confluent-kafka ``ShareConsumer``s subscribing together to a
4-partition topic holding 400 records both get records, rather than the first taking all 400
while the second waits for the next assignment interval.

"Together" is what the server saw: the second member joined (its "member joins the share
group" event) before the group's first acquisition (the first "share partition start offset
resolved", logged as a partition's first fetch acquires). A first member that fetched before
the second joined rightly took every record (Kafka's share fetch would too), so that run is not
the scenario under test and is run again with a new group (at most three times). On a fast
machine the two joins land milliseconds apart; on a loaded one they can be 60 ms apart and still
both precede the first fetch, which waits for the first member's next heartbeat.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from confluent_kafka import ShareConsumer

from tests.harness import ServerProcess, event_seconds, wait_until
from tests.integration.share_clients import create_topic, produce, set_group_configs

TOPIC = "first-members"
PARTITIONS = 4
PER_PARTITION = 100


class Poller:
    """An implicit-mode ShareConsumer (the default mode) polling on its own thread: each poll
    acknowledges the previous poll's records as accepted."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.conf = {"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0}
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


def _seen(server: ServerProcess, group: str, event: str) -> list[float]:
    """When the server logged ``event`` for the group (seconds, in order)."""
    return [event_seconds(e) for e in server.events_of(event) if e.get("group_id") == group]


def _joins(server: ServerProcess, group: str) -> list[float]:
    """When the server saw the group's members join."""
    return _seen(server, group, "member joins the share group")


def _first_acquisition(server: ServerProcess, group: str) -> float:
    """When the group's first fetch came to acquire records (no acquisition precedes it)."""
    return min(_seen(server, group, "share partition start offset resolved"))


def _run(server: ServerProcess, group: str) -> tuple[list[int], list[float], float]:
    """Two pollers started together until every record is delivered: what each got, when
    the server saw them join, and when the group's first acquisition came."""
    bootstrap = server.bootstrap
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    pollers = [Poller(bootstrap, group), Poller(bootstrap, group)]
    try:
        for poller in pollers:
            poller.thread.start()
        total = PARTITIONS * PER_PARTITION
        wait_until(lambda: sum(len(p.offsets) for p in pollers) >= total, 60, interval=0.1,
                   message="every record delivered")
        delivered = [o for p in pollers for o in p.offsets]
        assert len(set(delivered)) == total
    finally:
        for poller in pollers:
            poller.stop.set()
        for poller in pollers:
            poller.thread.join(20)
    assert all(p.errors == [] for p in pollers), [p.errors for p in pollers]
    # the lines were logged before the answers that delivered the records; the reader may lag
    wait_until(lambda: len(_joins(server, group)) >= 2
               and _seen(server, group, "share partition start offset resolved"), 10,
               message="the joins and the first acquisition in the server's log")
    return [len(p.offsets) for p in pollers], _joins(server, group), _first_acquisition(
        server, group)


@pytest.mark.slow
def test_two_share_consumers_joining_together_both_get_records(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data").start()  # the server's defaults: seed 000's
    try:
        create_topic(server.bootstrap, TOPIC, PARTITIONS)
        for partition in range(PARTITIONS):
            produce(server.bootstrap, TOPIC, PER_PARTITION, partition=partition)
        for attempt in range(3):
            group = f"first-members-{attempt}"
            counts, joins, first_acquisition = _run(server, group)
            assert len(joins) == 2, joins
            if max(joins) < first_acquisition:
                break
        else:
            raise AssertionError("the second member never joined before the first fetch: "
                                 f"joins {joins}, first acquisition {first_acquisition}")
        events = [line for line in server.output().splitlines() if group in line]
        assert all(count > 0 for count in counts), (counts, "\n".join(events))
    finally:
        server.stop()
