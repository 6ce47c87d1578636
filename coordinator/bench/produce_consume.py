"""``python -m coordinator bench produce-consume``: records/s and MB/s produced by
confluent-kafka and consumed by an assign-based confluent-kafka consumer through a real server,
and the end-to-end latency (produce call to consumer poll) percentiles.

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

TOPIC = "bench-produce-consume"
_STAMP = struct.Struct(">q")


def _percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


class _Reader(threading.Thread):
    def __init__(self, bootstrap: str, partitions: int, expected: int) -> None:
        super().__init__(daemon=True)
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
                             "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING)
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
              acks: str, rate: int = 0) -> dict[str, Any]:
    """One run; ``rate`` > 0 paces the producer at that many records/s (latency at a given
    load rather than at saturation, where it is mostly queueing in the producer)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(10)
    reader = _Reader(bootstrap, partitions, records)
    reader.start()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "batch.size": 262144, "queue.buffering.max.messages": 1_000_000})
    # one warm-up record: timing starts once the consumer is fetching
    producer.produce(TOPIC, _STAMP.pack(0))
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
                producer.produce(TOPIC, _STAMP.pack(time.time_ns()) + padding,
                                 on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush(120)
    produce_s = time.perf_counter() - started
    reader.join(120)
    reader.stop.set()
    consume_s = (reader.last - reader.first) if reader.first else float("nan")
    latencies = sorted(reader.latencies_ms)
    record_bytes = records * max(size, _STAMP.size)
    return {
        "case": "produce-consume", "records": records, "record_bytes": size,
        "partitions": partitions, "acks": acks, "rate_limit": rate or None,
        "delivery_errors": errors,
        "consumed": len(latencies),
        "produce_records_per_s": round(records / produce_s),
        "produce_mb_per_s": round(record_bytes / produce_s / 1e6, 2),
        "consume_records_per_s": round(len(latencies) / consume_s) if consume_s else None,
        "consume_mb_per_s": round(reader.bytes / consume_s / 1e6, 2) if consume_s else None,
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


def run(args: argparse.Namespace) -> int:
    if args.bootstrap:
        row = run_bench(args.bootstrap, args.records, args.record_bytes, args.partitions,
                        args.acks, args.rate)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            server = ServerProcess(Path(tmp) / "data", {
                "coordinator.log.flush.interval.ms": str(args.flush_interval_ms)}).start()
            try:
                row = run_bench(server.bootstrap, args.records, args.record_bytes,
                                args.partitions, args.acks, args.rate)
            finally:
                server.stop()
                server.kill()
        row["flush_interval_ms"] = args.flush_interval_ms
    print(json.dumps(row))
    return 0
