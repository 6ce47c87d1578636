"""A transactional consume-transform-produce loop (confluent-kafka: a read_committed consumer
of a classic group and a transactional producer; each batch's output and the consumer's
positions in one transaction) keeps committing while its transaction coordinator moves from
broker to broker and then the broker coordinating it is stopped (issue 35's done-when): every
source record comes out transformed exactly once, and the group's committed offsets are the
source's end."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_coordinator import Coordinator
from tests.integration.cluster_clients import (
    QUIET,
    STEP_TIMEOUT_S,
    SequenceProducer,
    read_topic,
    wait_for,
)

SOURCE, SINK, GROUP, TRANSACTIONAL_ID = "payments", "ledger", "etl", "etl-1"
PARTITIONS = 3


class TransformLoop(threading.Thread):
    """Consume a batch, produce it transformed (value + 1,000,000), send the positions, commit;
    an abortable error aborts and rewinds to the committed offsets."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(name="transform", daemon=True)
        self.bootstrap = bootstrap
        self.commits = 0
        self.aborts = 0
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # raised by stop()
            self.failure = exc

    def _loop(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "isolation.level": "read_committed", **QUIET})
        producer = Producer({"bootstrap.servers": self.bootstrap,
                             "transactional.id": TRANSACTIONAL_ID,
                             "transaction.timeout.ms": 30000, **QUIET})
        producer.init_transactions(60)
        consumer.subscribe([SOURCE])
        try:
            while not self.stopping.is_set():
                records = [m for m in consumer.consume(num_messages=20, timeout=0.2)
                           if m.error() is None]
                if records:
                    self._transact(consumer, producer, records)
        finally:
            consumer.close()

    def _transact(self, consumer: Consumer, producer: Producer, records: list[Any]) -> None:
        producer.begin_transaction()
        try:
            for message in records:
                producer.produce(SINK, value=str(int(message.value()) + 1_000_000).encode(),
                                 partition=message.partition())
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(),
                                                 60)
            self._commit(producer)
            self.commits += 1
        except KafkaException as exc:
            error = exc.args[0]
            self.errors.append(error.name())
            if not error.txn_requires_abort():
                raise
            producer.abort_transaction(60)
            self.aborts += 1
            self._rewind(consumer)

    @staticmethod
    def _commit(producer: Producer) -> None:
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while True:
            try:
                producer.commit_transaction(60)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable() or time.monotonic() > deadline:
                    raise

    @staticmethod
    def _rewind(consumer: Consumer) -> None:
        committed = consumer.committed(consumer.assignment(), 30)
        for tp in committed:
            consumer.seek(TopicPartition(tp.topic, tp.partition,
                                         tp.offset if tp.offset >= 0 else 0))

    def stop(self) -> None:
        self.stopping.set()
        self.join(90)
        assert not self.is_alive(), "the transform loop did not stop"
        if self.failure is not None:
            raise self.failure


def committed_offsets(bootstrap: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, **QUIET})
    try:
        found = consumer.committed([TopicPartition(SOURCE, p) for p in range(PARTITIONS)], 30)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


@pytest.mark.slow
@pytest.mark.kafka_coordinator(brokers=3)
def test_a_transactional_loop_commits_through_transaction_coordinator_moves(
        kafka_coordinator: Coordinator) -> None:
    server = kafka_coordinator
    bootstrap = server.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    for topic in (SOURCE, SINK):
        admin.create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(15)
    source = SequenceProducer(bootstrap, SOURCE, PARTITIONS, rate=60.0)
    loop = TransformLoop(bootstrap)
    source.start()
    loop.start()
    try:
        def commits_after(count: int) -> None:
            wait_for(lambda: loop.commits >= count + 3 or loop.failure, STEP_TIMEOUT_S,
                     "the loop to commit transactions")
            assert loop.failure is None, loop.failure

        commits_after(0)
        for broker in (2, 3):  # the second move surely moves it: from 2 to 3
            moved = server.move_coordinator(TRANSACTIONAL_ID, broker, load_ms=300)
            commits_after(loop.commits)
        assert moved["moved"] and moved["broker"] == 3, moved
        server.move_coordinator(GROUP, 2)  # the group's offsets' coordinator too
        commits_after(loop.commits)
        stopped = server.brokers.stop(3)  # the transaction coordinator's broker
        assert any(move["kind"] == "coordinator" and move["partition"] ==
                   moved["coordinator_partition"] for move in stopped["moves"]), stopped
        commits_after(loop.commits)
        server.brokers.start(3)
        source.stop()
        acked = sorted(source.acked)
        ends = {p: len([v for v in acked if v % PARTITIONS == p]) for p in range(PARTITIONS)}
        wait_for(lambda: committed_offsets(bootstrap) == ends, STEP_TIMEOUT_S,
                 "the loop to commit the source's end")
    finally:
        source.stopping.set()
        loop.stop()
    out = [value - 1_000_000 for values in read_topic(bootstrap, SINK, PARTITIONS).values()
           for value in values]
    assert sorted(out) == acked  # each record transformed exactly once, none lost
