"""Clients for the transaction tests.

``EtlWorker`` runs a confluent-kafka consume-transform-produce loop in a child process (so the
test can SIGKILL it): a read_committed consumer of ``source`` in a classic group and a
transactional producer; each batch of records polled is written to ``sink`` (value + b"-out")
and the consumer's positions are sent in the same transaction
(``send_offsets_to_transaction``), then committed. An abortable error aborts the transaction and
rewinds the consumer to its committed offsets; the child prints one JSON line per event.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

WORKER = r'''
import json, os, sys, time
from confluent_kafka import Consumer, KafkaException, Producer

bootstrap, group, source, sink, transactional_id, hold_ms, stay_file = sys.argv[1:8]


def say(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "isolation.level": "read_committed", "session.timeout.ms": 3000,
                     "heartbeat.interval.ms": 300})
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                     "transaction.timeout.ms": 4000})
producer.init_transactions(30)
consumer.subscribe([source], on_assign=lambda c, ps: say("assigned",
                                                          partitions=[p.partition for p in ps]))
say("ready")
while True:
    records = [m for m in consumer.consume(num_messages=10, timeout=0.2) if m.error() is None]
    if not records:
        continue
    producer.begin_transaction()
    try:
        for m in records:
            producer.produce(sink, key=m.key(), value=m.value() + b"-out")
        time.sleep(int(hold_ms) / 1000)  # most of the time this worker is inside a transaction
        if stay_file and os.path.exists(stay_file):  # the test is about to kill it in here
            say("staying", count=len(records))
            time.sleep(3600)
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        say("committed", count=len(records))
    except KafkaException as exc:
        error = exc.args[0]
        if error.fatal() or not error.txn_requires_abort():
            say("fatal", error=str(error))
            raise
        producer.abort_transaction(30)
        assignment = consumer.assignment()
        for tp in consumer.committed(assignment, 30):
            if tp.offset >= 0:
                consumer.seek(tp)
        say("aborted", error=str(error))
'''


class EtlWorker:
    def __init__(self, bootstrap: str, group: str, source: str, sink: str,
                 transactional_id: str, hold_ms: int = 50, stay_file: str = "") -> None:
        """``stay_file``: once that file exists, the worker stays inside the next transaction it
        has records for (says ``staying``) until it is killed."""
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, bootstrap, group, source, sink, transactional_id,
             str(hold_ms), stay_file],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self.events.append(json.loads(line))

    def seen(self, event: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["event"] == event]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


class CommittedReader:
    """A read_committed (or read_uncommitted) consumer of a whole topic by assignment, no
    group: ``poll_for`` collects values until it has ``count`` of them or times out."""

    def __init__(self, bootstrap: str, topic: str, partitions: int,
                 isolation: str = "read_committed") -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader",
                                  "isolation.level": isolation, "enable.auto.commit": False,
                                  "fetch.wait.max.ms": 100})
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self.values: list[bytes] = []

    def poll_for(self, count: int, timeout: float = 30.0) -> list[bytes]:
        deadline = time.monotonic() + timeout
        while len(self.values) < count and time.monotonic() < deadline:
            message = self.consumer.poll(0.1)
            if message is None:
                continue
            error = message.error()
            if error is None:
                self.values.append(message.value() or b"")
            elif error.code() != KafkaError._PARTITION_EOF:
                raise AssertionError(f"consumer error: {error}")
        return list(self.values)

    def read_to_end(self, topic: str, partitions: int, timeout: float = 30.0) -> list[bytes]:
        """Everything up to each partition's high watermark (which a read_committed consumer
        reaches only once no transaction is open there)."""
        deadline = time.monotonic() + timeout
        while True:
            ends = [self.consumer.get_watermark_offsets(TopicPartition(topic, p), 5)[1]
                    for p in range(partitions)]
            positions = [tp.offset for tp in self.consumer.position(
                [TopicPartition(topic, p) for p in range(partitions)])]
            if all(pos >= end or end == 0 for pos, end in zip(positions, ends, strict=True)):
                return list(self.values)
            if time.monotonic() > deadline:
                raise AssertionError(f"positions {positions} short of the ends {ends}")
            self.poll_for(len(self.values) + 1, timeout=0.2)

    def close(self) -> None:
        self.consumer.close()
