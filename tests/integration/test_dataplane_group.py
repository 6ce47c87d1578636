"""A KIP-848 consumer group consumes a topic with commits while a member joins.

Three confluent-kafka consumers (``group.protocol=consumer``, each in its own process) consume
20,000 uniquely numbered records from a 6-partition topic, committing synchronously after each
batch they process; once 5,000 records have been processed a fourth member subscribes. Every
record must be processed, duplicates (re-processing after the rebalance) are counted and reported,
and the final committed offsets must equal the log end offsets: lag 0.

Each child prints what it processed, its callbacks and its commit failures as JSON lines, which
the test gathers on reader threads.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness import ServerProcess, wait_until

OVERRIDES = {
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
}

TOPIC = "dp-group"
GROUP = "dp-group-consumers"
PARTITIONS = 6
RECORDS = 20_000
JOIN_AFTER = 5_000

# A consumer process. It waits for a "go" line on stdin before subscribing (so the fourth member
# is already running when it is told to join), then consumes batches, "processes" each record
# (a fixed cost per record, so consumption lasts long enough for a rebalance to happen
# mid-stream), reports the batch and commits synchronously; a failed commit is reported and
# retried (with the positions of what it still owns) when a poll brings nothing. EOF on stdin
# closes it.
CHILD = r"""
import json, select, sys, time
from confluent_kafka import Consumer, KafkaError, KafkaException
bootstrap, group, topic = sys.argv[1:4]
def emit(**event):
    event["t"] = time.monotonic()
    print(json.dumps(event), flush=True)
def tps(parts):
    return [p.partition for p in parts]
sys.stdin.readline()
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
              "enable.auto.commit": False, "auto.offset.reset": "earliest",
              "fetch.wait.max.ms": 100, "log_level": 0})
c.subscribe([topic], on_assign=lambda c, p: emit(event="assign", partitions=tps(p)),
            on_revoke=lambda c, p: emit(event="revoke", partitions=tps(p)),
            on_lost=lambda c, p: emit(event="lost", partitions=tps(p)))
def commit():
    try:
        c.commit(asynchronous=False)
    except KafkaException as e:
        if e.args[0].code() == KafkaError._NO_OFFSET:  # nothing owned left to commit
            return False
        emit(event="commit_failed", error=str(e.args[0]))
        return True
    return False
emit(event="subscribed")
retry = False
try:
    while not select.select([sys.stdin], [], [], 0)[0]:
        batch = [m for m in c.consume(50, 0.1) if m.error() is None]
        if batch:
            time.sleep(0.001 * len(batch))
            emit(event="processed", records=[[m.partition(), m.offset(), m.value().decode()]
                                             for m in batch])
            retry = commit()
        elif retry:  # a failed commit (e.g. STALE_MEMBER_EPOCH) is retried when idle
            retry = commit()
finally:
    c.close()
    emit(event="closed")
"""


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ids: Counter[str] = Counter()
        self.where: defaultdict[str, list[tuple[str, int, int]]] = defaultdict(list)

    def total(self) -> int:
        with self.lock:
            return sum(self.ids.values())

    def distinct(self) -> int:
        with self.lock:
            return len(self.ids)


class Member:
    """One consumer process and what it reported."""

    def __init__(self, name: str, bootstrap: str, tally: Tally) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, bootstrap, GROUP, TOPIC],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.tally = tally
        self.events: list[dict[str, Any]] = []
        self.processed = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            with self.tally.lock:
                if event["event"] == "processed":
                    self.processed += len(event["records"])
                    for partition, offset, value in event["records"]:
                        self.tally.ids[value] += 1
                        self.tally.where[value].append((self.name, partition, offset))
                    del event["records"]
                self.events.append(event)

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        with self.tally.lock:
            return [e for e in self.events if e["event"] == kind]

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.reader.join(5)


@pytest.fixture
def group_server(tmp_path: Path) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path / "data", OVERRIDES) as process:
        yield process


def produce_all(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    errors: list[Any] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for i in range(RECORDS):
        producer.produce(TOPIC, value=f"id-{i:05d}".encode(), partition=i % PARTITIONS,
                         on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors[:5]


def log_end_offsets(bootstrap: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dp-watermarks"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()


def committed_offsets(admin: AdminClient) -> dict[int, int]:
    request = ConsumerGroupTopicPartitions(
        GROUP, [TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    result = admin.list_consumer_group_offsets([request])[GROUP].result(10)
    return {tp.partition: tp.offset for tp in result.topic_partitions}


@pytest.mark.slow
def test_group_of_three_consumes_everything_while_a_fourth_joins(
        group_server: ServerProcess) -> None:
    started = time.monotonic()
    bootstrap = group_server.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(10)
    produce_all(bootstrap)
    end_offsets = log_end_offsets(bootstrap)
    assert sum(end_offsets.values()) == RECORDS, end_offsets

    tally = Tally()
    members = [Member(f"m{n}", bootstrap, tally) for n in range(1, 5)]
    try:
        for member in members[:3]:
            member.go()
        wait_until(lambda: tally.total() >= JOIN_AFTER, 20,
                   message=f"{JOIN_AFTER} records processed by the first three")
        joined_at = tally.total()
        join_time = time.monotonic()
        members[3].go()
        wait_until(lambda: tally.distinct() == RECORDS, 30,
                   message=f"all {RECORDS} records processed")
        wait_until(lambda: committed_offsets(admin) == end_offsets, 15, interval=0.2,
                   message="committed offsets to reach the log end offsets")

        with tally.lock:
            duplicates = {value: n for value, n in tally.ids.items() if n > 1}
            extra = sum(n - 1 for n in duplicates.values())
            sample = {value: tally.where[value] for value in sorted(duplicates)[:5]}
        per_member = {m.name: m.processed for m in members}
        # partitions given up by the first three for the fourth (not the initial convergence)
        revokes = {m.name: [e["partitions"] for e in m.kinds("revoke") if e["t"] > join_time]
                   for m in members}
        failed_commits = {m.name: [e["error"] for e in m.kinds("commit_failed")]
                          for m in members if m.kinds("commit_failed")}
        report = (f"{extra} duplicate deliveries of {len(duplicates)} records "
                  f"(fourth member joined after {joined_at} processed); "
                  f"processed per member {per_member}; revokes {revokes}; "
                  f"failed commits {failed_commits}; sample {sample}")
        print(report)

        assert set(tally.ids) == {f"id-{i:05d}" for i in range(RECORDS)}
        assert extra < RECORDS // 10, report
        assert members[3].processed > 0, f"the fourth member processed nothing: {report}"
        assert any(revokes[m.name] for m in members[:3]), f"no revocation for the fourth: {report}"
        lag = {p: end_offsets[p] - offset for p, offset in committed_offsets(admin).items()}
        assert lag == dict.fromkeys(range(PARTITIONS), 0), lag
    finally:
        for member in members:
            member.stop()
    elapsed = time.monotonic() - started
    print(f"runtime {elapsed:.1f}s")
