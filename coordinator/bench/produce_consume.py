"""``python -m coordinator bench produce-consume``: records/s and MB/s produced by
confluent-kafka and consumed by an assign-based confluent-kafka consumer through a real server,
and the end-to-end latency (produce call to consumer poll) percentiles.

``--transactional`` runs it twice on one server: a transactional producer committing every
``--records-per-transaction`` records (100) read by a read_committed consumer, whose
``committed_records_per_s`` (records produced / time until the consumer saw the last one
committed) is printed next to the same figure of the non-transactional run
(``non_transactional_records_per_s``).

Each value starts with the producer's send time (ns), so the consumer measures latency without
a shared clock beyond this process. confluent-kafka (the ``dev`` extra) is imported when the
bench runs, so that the CLI, and with it ``make run``, needs only the server's dependencies.
"""

from __future__ import annotations

import argparse
import json
import struct
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

from coordinator.testing import ServerProcess
from storage.machine import with_machine

TOPIC = "bench-produce-consume"
_STAMP = struct.Struct(">q")


def _percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


class _Reader(threading.Thread):
    def __init__(self, bootstrap: str, partitions: int, expected: int, topic: str = TOPIC,
                 isolation: str = "read_uncommitted") -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.isolation = isolation
        self.bootstrap = bootstrap
        self.partitions = partitions
        self.expected = expected
        self.latencies_ms: list[float] = []
        self.bytes = 0
        self.first = 0.0
        self.last = 0.0
        self.ready = threading.Event()
        self.stop = threading.Event()

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "bench-reader",
                             "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                             "isolation.level": self.isolation})
        consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING)
                         for p in range(self.partitions)])
        try:
            while len(self.latencies_ms) < self.expected and not self.stop.is_set():
                for msg in consumer.consume(1000, 0.005):
                    if msg.error() is not None:
                        continue
                    now = time.time_ns()
                    value = cast(bytes, msg.value())  # every record written here has a value
                    if _STAMP.unpack_from(value)[0] == 0:  # the warm-up record
                        self.ready.set()
                        continue
                    if not self.first:
                        self.first = time.perf_counter()
                    self.latencies_ms.append((now - _STAMP.unpack_from(value)[0]) / 1e6)
                    self.bytes += len(value)
            self.last = time.perf_counter()
        finally:
            consumer.close()


def run_bench(bootstrap: str, records: int, size: int, partitions: int,
              acks: str, rate: int = 0, per_transaction: int = 0,
              topic: str = TOPIC) -> dict[str, Any]:
    """One run; ``rate`` > 0 paces the producer at that many records/s (latency at a given
    load rather than at saturation, where it is mostly queueing in the producer);
    ``per_transaction`` > 0 makes the producer transactional, committing that many records at
    a time, and the consumer read_committed."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)
    reader = _Reader(bootstrap, partitions, records, topic,
                     "read_committed" if per_transaction else "read_uncommitted")
    reader.start()
    config = {"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
              "batch.size": 262144, "queue.buffering.max.messages": 1_000_000}
    if per_transaction:
        config.update({"acks": "all", "transactional.id": f"{topic}-producer"})
    producer = Producer(config)
    if per_transaction:
        producer.init_transactions(30)
        producer.begin_transaction()
    # one warm-up record: timing starts once the consumer is fetching
    producer.produce(topic, _STAMP.pack(0))
    if per_transaction:
        producer.commit_transaction(30)
        producer.begin_transaction()
    producer.flush(10)
    reader.ready.wait(30)
    padding = b"x" * max(0, size - _STAMP.size)
    errors = 0

    def delivered(err: Any, _msg: Any) -> None:
        nonlocal errors
        if err is not None:
            errors += 1

    started = time.perf_counter()
    for n in range(records):
        if rate > 0:
            ahead = started + n / rate - time.perf_counter()
            if ahead > 0:
                time.sleep(ahead)
        while True:
            try:
                producer.produce(topic, _STAMP.pack(time.time_ns()) + padding,
                                 on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
        if per_transaction and (n + 1) % per_transaction == 0:
            producer.commit_transaction(60)
            if n + 1 < records:
                producer.begin_transaction()
    if per_transaction and records % per_transaction:
        producer.commit_transaction(60)
    producer.flush(120)
    produce_s = time.perf_counter() - started
    reader.join(120)
    reader.stop.set()
    end_to_end_s = (reader.last - started) if reader.first else float("nan")
    consume_s = (reader.last - reader.first) if reader.first else float("nan")
    latencies = sorted(reader.latencies_ms)
    record_bytes = records * max(size, _STAMP.size)
    return {
        "case": "produce-consume", "records": records, "record_bytes": size,
        "partitions": partitions, "acks": config["acks"], "rate_limit": rate or None,
        "records_per_transaction": per_transaction or None,
        "delivery_errors": errors,
        "consumed": len(latencies),
        "produce_records_per_s": round(records / produce_s),
        "produce_mb_per_s": round(record_bytes / produce_s / 1e6, 2),
        "consume_records_per_s": round(len(latencies) / consume_s) if consume_s else None,
        "consume_mb_per_s": round(reader.bytes / consume_s / 1e6, 2) if consume_s else None,
        "committed_records_per_s": round(len(latencies) / end_to_end_s)
        if reader.first else None,
        "e2e_latency_ms_p50": round(_percentile(latencies, 0.50), 2),
        "e2e_latency_ms_p99": round(_percentile(latencies, 0.99), 2),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--acks", default="all", choices=("0", "1", "all"))
    parser.add_argument("--rate", type=int, default=0,
                        help="records/s the producer is paced at (0: as fast as it can)")
    parser.add_argument("--flush-interval-ms", type=int, default=0,
                        help="coordinator.log.flush.interval.ms of the server started")
    parser.add_argument("--bootstrap", default=None,
                        help="use a running server instead of starting one")
    parser.add_argument("--transactional", action="store_true",
                        help="a transactional producer and a read_committed consumer, next to "
                             "the same run without transactions")
    parser.add_argument("--records-per-transaction", type=int, default=100)


def _bench(bootstrap: str, args: argparse.Namespace) -> dict[str, Any]:
    if not args.transactional:
        return run_bench(bootstrap, args.records, args.record_bytes, args.partitions,
                         args.acks, args.rate)
    plain = run_bench(bootstrap, args.records, args.record_bytes, args.partitions, "all",
                      args.rate, topic=f"{TOPIC}-plain")
    row = run_bench(bootstrap, args.records, args.record_bytes, args.partitions, "all",
                    args.rate, args.records_per_transaction, topic=f"{TOPIC}-transactional")
    row["case"] = "produce-consume-transactional"
    row["non_transactional_records_per_s"] = plain["committed_records_per_s"]
    row["non_transactional_produce_records_per_s"] = plain["produce_records_per_s"]
    return row


def run(args: argparse.Namespace) -> int:
    if args.bootstrap:
        row = _bench(args.bootstrap, args)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            server = ServerProcess(Path(tmp) / "data", {
                "coordinator.log.flush.interval.ms": str(args.flush_interval_ms)}).start()
            try:
                row = _bench(server.bootstrap, args)
            finally:
                server.stop()
                server.kill()
        row["flush_interval_ms"] = args.flush_interval_ms
    print(json.dumps(with_machine(row)))
    return 0
