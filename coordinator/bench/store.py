"""``python -m coordinator bench store``: durable offset commits per second through the server
from a real client (kafka-python), with fsync on and off, and replay speed of a large store."""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from coordinator.testing import ServerProcess
from storage.bench import run_store_replay
from storage.machine import with_machine

TOPIC = "bench-commits"
PARTITIONS = 8


def _commit_loop(bootstrap: str, group: str, commits: int, out: list[float]) -> None:
    from kafka import KafkaConsumer, TopicPartition  # when the bench runs, not with the CLI
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                             enable_auto_commit=False)
    partitions = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    consumer.assign(partitions)
    try:
        for n in range(commits):
            started = time.perf_counter()
            consumer.commit({tp: OffsetAndMetadata(n, "", -1) for tp in partitions})
            out.append(time.perf_counter() - started)
    finally:
        consumer.close(autocommit=False)


def commits_through_server(flush_interval_ms: int, clients: int, commits: int) -> dict[str, Any]:
    from kafka.admin import KafkaAdminClient, NewTopic

    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        server = ServerProcess(Path(tmp) / "data", {
            "coordinator.log.flush.interval.ms": str(flush_interval_ms),
            "log.cleaner.enable": "false",
        }).start()
        try:
            admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
            admin.close()
            latencies: list[list[float]] = [[] for _ in range(clients)]
            threads = [threading.Thread(target=_commit_loop,
                                        args=(server.bootstrap, f"bench-{i}", commits,
                                              latencies[i]))
                       for i in range(clients)]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - started
        finally:
            server.stop()
            server.kill()
    flat = sorted(x for per_client in latencies for x in per_client)
    done = len(flat)
    return {
        "case": f"offset commits, fsync {'per write' if flush_interval_ms == 0 else 'off'}",
        "coordinator.log.flush.interval.ms": flush_interval_ms,
        "clients": clients,
        "partitions_per_commit": PARTITIONS,
        "commits": done,
        "commits_per_s": round(done / elapsed, 1),
        "offsets_per_s": round(done * PARTITIONS / elapsed, 1),
        "p50_ms": round(flat[done // 2] * 1000, 2) if done else None,
        "p99_ms": round(flat[min(done - 1, int(done * 0.99))] * 1000, 2) if done else None,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", type=int, default=1_000_000,
                        help="records in the store whose replay is timed")
    parser.add_argument("--clients", type=int, default=8, help="concurrent committing clients")
    parser.add_argument("--commits", type=int, default=300, help="commits per client")


def run(args: argparse.Namespace) -> int:
    rows = [
        commits_through_server(0, args.clients, args.commits),
        commits_through_server(60000, args.clients, args.commits),
        {"case": "replay", **run_store_replay(records=args.records)},
    ]
    for row in rows:
        print(json.dumps(with_machine(row)))
    return 0
