"""The chaos soak's load: real clients on threads, each journaling what the server acknowledged.

- ``produce``: confluent-kafka's idempotent producer with ``acks=all``, unique values;
- ``consume``: a confluent-kafka consumer of a group (classic or consumer protocol) that
  consumes and commits its positions synchronously every ``commit_interval_s``;
- ``churn``: kafka-python consumers of a classic group that join, consume, commit and leave,
  one after the other.

Every client retries through the kills on its own; an error is counted, never raised. The
clients are imported here, not by the CLI (they are in the dev extra).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from .journal import Journal

PRODUCE_BATCH = 20

REBALANCE_TIMEOUT_MS = 20000
"""A consumer-protocol member's ``max.poll.interval.ms``, which librdkafka sends as its
rebalance timeout: how long the coordinator waits for it to revoke partitions before it fences
it (it then joins again). librdkafka's default, 300 s, is longer than the soak waits for its
groups to come back (``chaos.CONVERGE_TIMEOUT_S``), and a member can be left with partitions to
revoke that it never heard of: librdkafka gives a ConsumerGroupHeartbeat up after its heartbeat
interval (0.5-1 s here) and sends the next one without its owned partitions, while the
coordinator, as Kafka's, sends an assignment only in the answer to a full request or to the
heartbeat that changed it. On a loaded machine an answer held behind an OffsetCommit's fsync on
the same connection takes longer than that (librdkafka's log: "Timed out
ConsumerGroupHeartbeatRequest in flight (after 1037ms) ... possibly held back by preceeding
OffsetCommitRequest"); the revocation it carried was lost, the member stayed at its epoch
with the partition, its successor waited for it, and the group stayed unreconciled until the
rebalance timeout. Fencing after 20 s is the protocol's own way out, and leaves a member that
polls every 0.1 s and commits synchronously every 0.5 s far more time than it needs."""


@dataclass
class Errors:
    """Errors the load saw (retried), by kind."""

    counts: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, kind: str) -> None:
        with self._lock:
            self.counts[kind] += 1


@dataclass
class Progress:
    """When each consumer last had a commit acknowledged (monotonic seconds), and how many
    kafka-python members joined."""

    last_commit: dict[str, float] = field(default_factory=dict)
    joined: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def member_joined(self) -> None:
        with self._lock:
            self.joined += 1

    def committed(self, member: str) -> None:
        with self._lock:
            self.last_commit[member] = time.monotonic()

    def all_committed_since(self, members: list[str], since: float) -> bool:
        return not self.not_committed_since(members, since)

    def not_committed_since(self, members: list[str], since: float) -> list[str]:
        """The members without a commit acknowledged at or after ``since``."""
        with self._lock:
            return [m for m in members if self.last_commit.get(m, -1.0) < since]


def produce(bootstrap: str, topic: str, rate: float, journal: Journal, errors: Errors,
            stop: threading.Event, prefix: str) -> None:
    """Produce ``rate`` records/s until ``stop``; then wait for every delivery report."""
    from confluent_kafka import KafkaError, KafkaException, Message, Producer

    def delivered(err: KafkaError | None, msg: Message) -> None:
        if err is None:
            value = msg.value()
            if value is not None:
                journal.record_acked(value)
        else:
            errors.add(f"delivery {err.name()}")

    def new_producer() -> Producer:
        return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 5, "message.timeout.ms": 120000,
                         "reconnect.backoff.max.ms": 200, "retry.backoff.max.ms": 200,
                         "client.id": "chaos-producer", "log_level": 0})

    producer = new_producer()
    sent = 0
    next_at = time.monotonic()
    try:
        while not stop.is_set():
            for _ in range(PRODUCE_BATCH):
                try:
                    producer.produce(topic, value=f"{prefix}-{sent}".encode(),
                                     on_delivery=delivered)
                    sent += 1
                except BufferError:
                    errors.add("produce queue full")
                    break
                except KafkaException as exc:  # a fatal idempotence error: a new producer
                    errors.add(f"producer fatal {exc.args[0].name()}")
                    producer.flush(30)
                    producer = new_producer()
                    break
            next_at += PRODUCE_BATCH / rate
            while not stop.is_set() and time.monotonic() < next_at:
                producer.poll(max(0.0, next_at - time.monotonic()))
        if producer.flush(120) > 0:
            errors.add("undelivered at the end")
    finally:
        producer.flush(1)


def consume(bootstrap: str, topic: str, group: str, protocol: str, member: str,
            journal: Journal, progress: Progress, errors: Errors, stop: threading.Event,
            commit_interval_s: float) -> None:
    """One group member: consume, and commit positions synchronously, until ``stop``."""
    from confluent_kafka import Consumer, KafkaException

    config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
              "enable.auto.commit": False, "auto.offset.reset": "earliest",
              "client.id": member, "reconnect.backoff.max.ms": 200,
              "retry.backoff.max.ms": 200, "log_level": 0}
    if protocol == "classic":
        config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    else:
        config["max.poll.interval.ms"] = REBALANCE_TIMEOUT_MS
    consumer = Consumer(config)
    consumer.subscribe([topic])
    consumed = False
    next_commit = time.monotonic() + commit_interval_s
    try:
        while not stop.is_set():
            message = consumer.poll(0.1)
            if message is not None:
                error = message.error()
                if error is None:
                    consumed = True
                else:
                    errors.add(f"consume {error.name()}")
            if time.monotonic() < next_commit:
                continue
            next_commit = time.monotonic() + commit_interval_s
            if not consumed and not consumer.assignment():
                continue
            try:
                result = consumer.commit(asynchronous=False)
            except KafkaException as exc:
                errors.add(f"commit {exc.args[0].name()}")
                continue
            for tp in result or ():
                if tp.error is None and tp.offset >= 0:
                    journal.commit_acked(group, tp.topic, tp.partition, tp.offset)
                elif tp.error is not None:
                    errors.add(f"commit {tp.error.name()}")
            progress.committed(member)
    finally:
        consumer.close()


JOIN_WAIT_S = 10.0
"""How long a churning member waits for its first assignment before it leaves anyway."""


def churn(bootstrap: str, topic: str, group: str, name: str, seed: int, journal: Journal,
          progress: Progress, errors: Errors, stop: threading.Event) -> None:
    """kafka-python members joining a classic group (waiting for an assignment), consuming 1-4 s,
    committing, leaving."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    logging.getLogger("kafka").setLevel(logging.CRITICAL)  # its retries are counted instead
    rng = random.Random(seed)
    generation = 0
    while not stop.is_set():
        generation += 1
        try:
            consumer = KafkaConsumer(
                bootstrap_servers=bootstrap, group_id=group, client_id=f"{name}-{generation}",
                enable_auto_commit=False, auto_offset_reset="earliest",
                session_timeout_ms=6000, heartbeat_interval_ms=500, request_timeout_ms=8000,
                reconnect_backoff_max_ms=200, retry_backoff_ms=100)
        except KafkaError as exc:
            errors.add(f"churn connect {type(exc).__name__}")
            stop.wait(0.5)
            continue
        try:
            consumer.subscribe([topic])
            # join first (a classic group's join waits out its initial rebalance delay, and a
            # kill meanwhile starts it again), at most JOIN_WAIT_S, then consume for 1-4 s
            joined_by = time.monotonic() + JOIN_WAIT_S
            while (not consumer.assignment() and time.monotonic() < joined_by
                   and not stop.is_set()):
                consumer.poll(timeout_ms=100)
            # joined once it was given partitions, even if a kill during the consume window
            # below takes them away again before it leaves
            if consumer.assignment():
                progress.member_joined()
            until = time.monotonic() + rng.uniform(1.0, 4.0)
            while time.monotonic() < until and not stop.is_set():
                consumer.poll(timeout_ms=100)
            positions = {tp: consumer.position(tp, timeout_ms=2000)
                         for tp in consumer.assignment()}
            if positions:
                from kafka.structs import OffsetAndMetadata

                known = {tp: pos for tp, pos in positions.items() if pos is not None}
                consumer.commit({tp: OffsetAndMetadata(pos, "", -1) for tp, pos in known.items()},
                                timeout_ms=8000)
                for tp, pos in known.items():
                    journal.commit_acked(group, tp.topic, tp.partition, pos)
        except (KafkaError, AssertionError) as exc:
            errors.add(f"churn {type(exc).__name__}")
        finally:
            try:
                consumer.close(autocommit=False, timeout_ms=3000)
            except KafkaError as exc:
                errors.add(f"churn close {type(exc).__name__}")
