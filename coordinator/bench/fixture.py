"""``python -m coordinator bench fixture``: how long a test waits for the coordinator.

What ``kafka_coordinator``'s pytest fixture does, timed: start ``serve --profile test`` as a
child process until it accepts clients with every coordinator partition loaded; then, for a
one-member group of a real client (confluent-kafka), the time from ``subscribe`` to the first
assignment (the ``on_assign`` callback with partitions), with the classic protocol and with the
consumer protocol (KIP-848). Each run starts a new server; the medians are reported.
``--profile serve`` gives the same numbers with Kafka's defaults, for comparison.
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from coordinator.testing import ServerProcess

from .server_runs import add_arguments as add_run_arguments
from .server_runs import create_topic, medians, print_result

TARGETS_MS = {"start_to_accepting_ms": 1000.0, "classic_first_assignment_ms": 300.0,
              "consumer_first_assignment_ms": 300.0}
"""Issue 18's targets (for the test profile)."""

TOPIC = "bench-fixture"
PARTITIONS = 3
ASSIGNMENT_TIMEOUT_S = 30.0


def start_server(data_dir: Path, profile: str) -> tuple[ServerProcess, float]:
    """A server started as the fixture starts it, and the ms until it accepted a connection."""
    started = time.perf_counter()
    server = ServerProcess(data_dir, {"metrics.listener": "http://127.0.0.1:0"},
                           profile=profile).start()
    server.wait_loaded()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5):
        pass
    return server, (time.perf_counter() - started) * 1000.0


def first_assignment_ms(bootstrap: str, group_protocol: str, group: str) -> float:
    """ms from ``subscribe`` to the first ``on_assign`` with partitions, for a one-member
    group of confluent-kafka's Consumer (imported here: the CLI does not need it)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "group.protocol": group_protocol, "enable.auto.commit": False})
    assigned: list[float] = []
    try:
        started = time.perf_counter()
        consumer.subscribe([TOPIC], on_assign=lambda _c, partitions: assigned.append(
            time.perf_counter()) if partitions else None)
        while not assigned:
            if time.perf_counter() - started > ASSIGNMENT_TIMEOUT_S:
                raise RuntimeError(f"no assignment for {group} within {ASSIGNMENT_TIMEOUT_S}s")
            consumer.poll(0.005)
        return (assigned[0] - started) * 1000.0
    finally:
        consumer.close()


def run_once(profile: str, run: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-fixture-") as tmp:
        server, start_ms = start_server(Path(tmp) / "data", profile)
        try:
            create_topic(server.bootstrap, TOPIC, PARTITIONS)
            return {
                "start_to_accepting_ms": start_ms,
                "classic_first_assignment_ms": first_assignment_ms(
                    server.bootstrap, "classic", f"bench-classic-{run}"),
                "consumer_first_assignment_ms": first_assignment_ms(
                    server.bootstrap, "consumer", f"bench-consumer-{run}"),
            }
        finally:
            server.stop()
            server.kill()


def run_bench(profile: str, runs: int) -> dict[str, Any]:
    samples = [run_once(profile, run) for run in range(runs)]
    result = medians("fixture", profile, samples, TARGETS_MS)
    result["targets_ms"] = TARGETS_MS
    result["within_targets"] = all(result[key] < target for key, target in TARGETS_MS.items())
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_arguments(parser, "test", "the server's profile (serve: Kafka's defaults, to compare)")


def run(args: argparse.Namespace) -> int:
    result = run_bench(args.profile, args.runs)
    return print_result(result, args.json, (
        f"  {key:32} {result[key]:8.1f} ms   (target < {target:.0f} ms; "
        f"runs {result['samples'][key]})" for key, target in TARGETS_MS.items()))
