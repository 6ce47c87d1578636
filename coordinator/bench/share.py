"""``python -m coordinator bench share``: records/s consumed and acknowledged by 1, 2 and 4
confluent-kafka ``ShareConsumer`` s of one share group (KIP-932), next to a plain consumer group
fetching the same records, through a real server (fsync before every answer, as by default).

The records (``--records`` of ``--record-bytes`` bytes on ``--partitions`` partitions) are
produced once with acks=all; each case then reads all of them with a new group that starts at
the earliest offset (``share.auto.offset.reset=earliest``, ``auto.offset.reset=earliest``).
A share consumer acknowledges implicitly (each poll accepts the previous one's records) and
commits its last acknowledgements before the clock stops; the clock runs from the first record
consumed to the last acknowledgement committed (joining is reported apart). The server computes
targets inline at once (``group.share.assignment.interval.ms=0``, offload off), so that every
consumer of a case gets partitions at its first heartbeat: what is measured is consumption,
not seed 000's batching. confluent-kafka (the ``dev`` extra) is imported when the bench runs.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from coordinator.testing import ServerProcess
from storage.machine import with_machine

TOPIC = "bench-share"
SERVER_OVERRIDES = {"group.share.assignment.interval.ms": "0",
                    "group.share.assignor.offload.enable": "false"}


def _produce(bootstrap: str, records: int, size: int, partitions: int) -> float:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(10)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "batch.size": 262144, "queue.buffering.max.messages": 1_000_000})
    value = b"x" * size
    started = time.perf_counter()
    for n in range(records):
        while True:
            try:
                producer.produce(TOPIC, value, partition=n % partitions)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    return records / (time.perf_counter() - started)


def _earliest(bootstrap: str, group: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest",
                    incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(10)


def _share_case(bootstrap: str, records: int, consumers: int, timeout_s: float
                ) -> dict[str, Any]:
    from confluent_kafka import ShareConsumer

    group = f"bench-share-{consumers}"
    _earliest(bootstrap, group)
    counts = [0] * consumers
    lock = threading.Lock()
    done = threading.Event()
    total = 0
    delivered_twice = 0
    seen: set[tuple[Any, Any]] = set()  # (partition, offset)
    errors: list[str] = []
    first: list[float] = []
    committed: list[float] = []

    def work(i: int) -> None:
        nonlocal total, delivered_twice
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        consumer.subscribe([TOPIC])
        try:
            while not done.is_set():
                batch: list[Any] = list(consumer.poll(0.5) or [])
                fresh = 0
                with lock:
                    for m in batch:
                        if m.error():
                            errors.append(str(m.error()))
                            continue
                        key = (m.partition(), m.offset())
                        if key in seen:
                            delivered_twice += 1
                            continue
                        seen.add(key)
                        fresh += 1
                    if fresh and not first:
                        first.append(time.perf_counter())
                    counts[i] += fresh
                    total += fresh
                    if total >= records:
                        done.set()
            consumer.commit_sync(30)  # the last poll's acknowledgements
            with lock:
                committed.append(time.perf_counter())
        finally:
            consumer.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(consumers)]
    for thread in threads:
        thread.start()
    done.wait(timeout_s)
    done.set()
    for thread in threads:
        thread.join(60)
    ended = max(committed, default=time.perf_counter())
    return _rates(total, started, first[0] if first else ended, ended) | {
        "consumers": consumers, "per_consumer": counts, "redelivered": delivered_twice,
        "errors": errors[:5]}


def _rates(total: int, started: float, first: float, ended: float) -> dict[str, Any]:
    """Records/s from the first record consumed to the last (joining the group and getting
    partitions is reported apart, as ``join_seconds``)."""
    consuming = max(1e-9, ended - first)
    return {"consumed": total, "records_per_s": round(total / consuming),
            "seconds": round(consuming, 2), "join_seconds": round(first - started, 2)}


def _fetch_case(bootstrap: str, records: int, timeout_s: float) -> dict[str, Any]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-fetch",
                         "auto.offset.reset": "earliest", "enable.auto.commit": True})
    consumer.subscribe([TOPIC])
    total = 0
    started = time.perf_counter()
    first = 0.0
    deadline = started + timeout_s
    try:
        while total < records and time.perf_counter() < deadline:
            got = sum(1 for m in consumer.consume(1000, 0.5) if not m.error())
            if got and not first:
                first = time.perf_counter()
            total += got
        consumer.commit(asynchronous=False)
        ended = time.perf_counter()
    finally:
        consumer.close()
    return _rates(total, started, first or ended, ended) | {"consumers": 1}


def run_bench(bootstrap: str, records: int, size: int, partitions: int,
              consumer_counts: list[int], timeout_s: float) -> dict[str, Any]:
    produce_rate = _produce(bootstrap, records, size, partitions)
    fetch = _fetch_case(bootstrap, records, timeout_s)
    row: dict[str, Any] = {
        "case": "share", "records": records, "record_bytes": size, "partitions": partitions,
        "produce_records_per_s": round(produce_rate),
        "fetch_records_per_s": fetch["records_per_s"], "fetch": fetch}
    for count in consumer_counts:
        result = _share_case(bootstrap, records, count, timeout_s)
        row[f"share_{count}_records_per_s"] = result["records_per_s"]
        row[f"share_{count}_vs_fetch"] = round(result["records_per_s"]
                                               / max(1, fetch["records_per_s"]), 3)
        row[f"share_{count}"] = result
    return row


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--consumers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds a case may take at most")
    parser.add_argument("--json", action="store_true", help="one JSON line (the default)")


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        with ServerProcess(Path(tmp) / "data", SERVER_OVERRIDES) as server:
            row = run_bench(server.bootstrap, args.records, args.record_bytes,
                            args.partitions, args.consumers, args.timeout)
    print(json.dumps(with_machine(row)))
    return 0
