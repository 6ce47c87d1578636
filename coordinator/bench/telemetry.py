"""``python -m coordinator bench telemetry``: what 1,000 clients pushing their metrics every
second (KIP-714) cost the server: its RSS, and the p99 of steady KIP-848 heartbeats beside
them, against the same heartbeats with no telemetry, in the same run.

One server (a child process, the ``heartbeats`` bench's settings plus a ``default``
client-metrics subscription asking for the consumer's metrics at ``--interval-ms``); phases
alternate ``off`` (heartbeats alone) and ``on`` (heartbeats while ``--clients`` client
instances over ``--connections`` connections push a librdkafka-like payload, nine metrics,
every interval: ``telemetry_load``), ``--rounds`` times each. One JSON line per phase
(``p99_ms``, ``heartbeats_per_s``, ``server_rss_mb``, ``pushes_per_s``, ``push_p99_ms``,
``push_errors``, the server's ``instances`` and ``series``), then a summary:
``p99_ratio`` (the median of the ``on`` phases' p99 over the median of the ``off`` ones'),
``rss_growth_mb`` (the RSS after the last ``on`` phase less before the first) and
``rss_per_client_kb``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from coordinator.testing import ServerProcess

from . import heartbeats, telemetry_load
from .procfs import status_kb

METRICS = ("org.apache.kafka.consumer.coordinator.,org.apache.kafka.consumer.fetch.manager.,"
           "org.apache.kafka.consumer.poll.")


def _scrape(url: str | None) -> dict[str, float]:
    if url is None:
        return {}
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    out = {"series": 0.0}
    for line in text.splitlines():
        if line.startswith("kafka_client_"):
            out["series"] += 1
        elif line.startswith("kafka_server_client_metrics_"):
            name, value = line.rsplit(" ", 1)
            out[name.removeprefix("kafka_server_client_metrics_")] = float(value)
    return out


def _rss_mb(pid: int) -> float:
    return round((status_kb(pid, "VmRSS") or 0) / 1024, 1)


def run_bench(clients: int = 1000, connections: int = 50, interval_ms: int = 1000,
              seconds: float = 5.0, warmup: float = 1.0, rounds: int = 2,
              rate: float = 1000.0) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    overrides = {**heartbeats.server_overrides("PLAINTEXT"),
                 "metrics.listener": "http://127.0.0.1:0",
                 "telemetry.default.metrics": METRICS,
                 "telemetry.default.interval.ms": str(interval_ms),
                 # a round's clients are gone before the next round's start
                 "telemetry.staleness.ms": "3000"}
    with tempfile.TemporaryDirectory(prefix="bench-telemetry-") as tmp, \
            ServerProcess(Path(tmp) / "data", overrides) as server:
        server.wait_loaded(30)
        assert server.proc is not None
        pid = server.proc.pid
        rss_start = _rss_mb(pid)
        for _ in range(rounds):
            for phase in ("off", "on"):
                load = None
                if phase == "on":
                    time.sleep(3.5)  # the last round's clients expired
                    load = telemetry_load.start(telemetry_load.LoadPlan(
                        server.bootstrap, clients, connections))
                    time.sleep(2 * interval_ms / 1000)  # every client has pushed
                started = time.monotonic()
                row = heartbeats.measure(server.bootstrap, pid, groups=10, members=10,
                                         connections=10, processes=1, rate=rate,
                                         seconds=seconds, warmup=warmup)
                state = _scrape(server.metrics_url)
                rss = _rss_mb(pid)
                pushes: dict[str, Any] = {}
                if load is not None:
                    elapsed = time.monotonic() - started + 2 * interval_ms / 1000
                    outcome = telemetry_load.stop(*load)
                    times = sorted(outcome.push_ms)
                    pushes = {"pushes_per_s": round(outcome.pushes / elapsed, 1),
                              "push_p99_ms": round(times[int(0.99 * (len(times) - 1))], 2)
                              if times else None,
                              "push_errors": outcome.errors}
                rows.append({"case": "telemetry", "phase": phase,
                             "clients": clients if phase == "on" else 0,
                             "interval_ms": interval_ms, "p50_ms": row["p50_ms"],
                             "p99_ms": row["p99_ms"],
                             "heartbeats_per_s": row["heartbeats_per_s"],
                             "server_cpu_pct": row["server_cpu_pct"], "server_rss_mb": rss,
                             "instances": state.get("instance_count"),
                             "series": state.get("series"), **pushes})
        on = [r["p99_ms"] for r in rows if r["phase"] == "on"]
        off = [r["p99_ms"] for r in rows if r["phase"] == "off"]
        on_rss = [r["server_rss_mb"] for r in rows if r["phase"] == "on"]
        growth = round(max(on_rss) - rss_start, 1)
        rows.append({"case": "telemetry", "phase": "summary", "clients": clients,
                     "p99_off_ms": statistics.median(off), "p99_on_ms": statistics.median(on),
                     "p99_ratio": round(statistics.median(on) / statistics.median(off), 2),
                     "rss_start_mb": rss_start, "rss_growth_mb": growth,
                     "rss_per_client_kb": round(1024 * growth / clients, 1)})
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clients", type=int, default=1000, help="client instances pushing")
    parser.add_argument("--connections", type=int, default=50,
                        help="connections the clients share")
    parser.add_argument("--interval-ms", type=int, default=1000, help="their push interval")
    parser.add_argument("--rate", type=float, default=1000.0,
                        help="heartbeats/s offered (open loop) beside them")
    parser.add_argument("--rounds", type=int, default=2, help="off/on phase pairs")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--json", action="store_true", help="one JSON line per phase (the "
                        "default)")


def run(args: argparse.Namespace) -> int:
    for row in run_bench(args.clients, args.connections, args.interval_ms, args.seconds,
                         args.warmup, args.rounds, args.rate):
        print(json.dumps(row), flush=True)
    return 0
