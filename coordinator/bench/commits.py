"""``python -m coordinator bench commits``: durable offset commits per second the server
takes, from a raw-wire load generator (``commit_load``) in processes of its own.

``--clients`` clients, each committing for a group of its own over ``--connections``
connections, commit ``--partitions`` partitions of one topic per OffsetCommit, one commit in
flight each (closed loop) or at ``--rate`` commits/s (open loop). The server runs in a child
process with its defaults, so every answer waits for the fsync of its records
(``coordinator.log.flush.interval.ms`` 0; ``--flush-interval-ms`` to change it). One JSON line
per partitions-per-commit value: ``commits_per_s``, ``offsets_per_s``, ``p50_ms``,
``p99_ms``, ``max_ms``, ``server_cpu_pct``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from coordinator.testing import ServerProcess
from storage.machine import with_machine

from .commit_load import TOPIC, Plan, worker_main
from .storm_client import create_topics
from .wire import Wire
from .wire import run as run_loop
from .workers import run_workers, split, summary

TOPIC_PARTITIONS = 64
"""The committed topic's partitions (runs with more per commit need a server of their own)."""


def _plans(bootstrap: str, clients: int, partitions: int, connections: int, processes: int,
           rate: float | None) -> list[Plan]:
    processes = max(1, min(processes, clients, connections))
    run_id = f"{time.monotonic_ns():x}"
    names = [f"bench-commit-{run_id}-{i}" for i in range(clients)]
    plans, first = [], 0
    for count, conns in zip(split(clients, processes), split(connections, processes),
                            strict=True):
        plans.append(Plan(bootstrap, tuple(names[first:first + count]), partitions, conns,
                          None if rate is None else rate * count / clients))
        first += count
    return plans


async def _create_topic(bootstrap: str, partitions: int) -> None:
    wire = await Wire.connect(bootstrap)
    try:
        await create_topics(wire, [TOPIC], partitions)
    finally:
        await wire.close()


def measure(bootstrap: str, server_pid: int | None, *, clients: int, partitions: int,
            connections: int, processes: int, rate: float | None, seconds: float,
            warmup: float) -> dict[str, Any]:
    run_loop(_create_topic(bootstrap, max(partitions, TOPIC_PARTITIONS)))  # once per server
    plans = _plans(bootstrap, clients, partitions, connections, processes, rate)
    outcomes, cpu_pct, cpu_s = run_workers(worker_main, plans, server_pid, seconds, warmup)
    done = summary(outcomes, seconds)
    return {
        "case": "commits", "clients": clients, "partitions_per_commit": partitions,
        "connections": connections, "processes": len(plans), "seconds": seconds,
        "offered_per_s": rate, "commits": done["answered"],
        "commits_per_s": done["per_s"], "offsets_per_s": done["per_s"] * partitions,
        "p50_ms": done["p50_ms"], "p99_ms": done["p99_ms"], "max_ms": done["max_ms"],
        "server_cpu_pct": cpu_pct, "generator_cpu_pct": done["generator_cpu_pct"],
        "server_cpu_us_per_commit": None if server_pid is None or not done["answered"]
        else round(1e6 * cpu_s / done["answered"], 1),
        "errors": done["errors"],
        "first_error": done["first_error"],
    }


def run_bench(partitions: list[int], *, clients: int = 256, connections: int = 32,
              processes: int = 1, rate: float | None = None, seconds: float = 5.0,
              warmup: float = 1.0, flush_interval_ms: int = 0) -> list[dict[str, Any]]:
    """The server in a child process, then a run per partitions-per-commit value."""
    with tempfile.TemporaryDirectory(prefix="bench-commits-") as tmp:
        overrides = {"coordinator.log.flush.interval.ms": str(flush_interval_ms),
                     "log.cleaner.enable": "false"}
        rows = []
        with ServerProcess(Path(tmp) / "data", overrides) as server:
            server.wait_loaded(30)
            assert server.proc is not None
            for count in partitions:
                rows.append({**measure(server.bootstrap, server.proc.pid, clients=clients,
                                       partitions=count, connections=connections,
                                       processes=processes, rate=rate, seconds=seconds,
                                       warmup=warmup),
                             "coordinator.log.flush.interval.ms": flush_interval_ms})
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clients", type=int, default=256,
                        help="committing clients, each for a group of its own")
    parser.add_argument("--partitions", type=int, action="append",
                        help="partitions per commit (repeat for several runs; default 1 and 8)")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--processes", type=int, default=1, help="load generator processes")
    parser.add_argument("--rate", type=float,
                        help="open loop at this many commits/s; without it, closed loop")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--flush-interval-ms", type=int, default=0,
                        help="coordinator.log.flush.interval.ms (0: fsync before answering)")
    parser.add_argument("--bootstrap", help="load this running server instead of starting "
                        "one; its CPU is reported with --server-pid")
    parser.add_argument("--server-pid", type=int)
    parser.add_argument("--json", action="store_true", help="one JSON line per run (the default)")


def run(args: argparse.Namespace) -> int:
    if args.bootstrap:
        for count in args.partitions or [1, 8]:
            row = measure(args.bootstrap, args.server_pid, clients=args.clients,
                          partitions=count, connections=args.connections,
                          processes=args.processes, rate=args.rate, seconds=args.seconds,
                          warmup=args.warmup)
            print(json.dumps(with_machine(row)), flush=True)
        return 0
    rows = run_bench(args.partitions or [1, 8], clients=args.clients,
                     connections=args.connections, processes=args.processes, rate=args.rate,
                     seconds=args.seconds, warmup=args.warmup,
                     flush_interval_ms=args.flush_interval_ms)
    for row in rows:
        print(json.dumps(with_machine(row)), flush=True)
    return 0
