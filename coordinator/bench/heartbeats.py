"""``python -m coordinator bench heartbeats``: steady KIP-848 heartbeats per second, and their
latency, on a listener of any security protocol.

``--groups`` consumer groups of ``--members`` members each heartbeat over ``--connections``
connections (raw frames, ``heartbeat_load``), from ``--processes`` load generator processes of
their own, so the server keeps a core to itself. Closed loop (the default): each member has
one heartbeat in flight, so the server is the limit; open loop (``--rate``): heartbeats leave
at that many per second whatever the answers do. The members first join and reconcile a
topic of as many partitions as a group has members; what is measured is the steady heartbeat
a Java consumer sends once reconciled. The server runs in a child process with Kafka's
defaults except an assignment interval of 0 and no offload (the set-up's rebalances are
quick; a steady heartbeat computes no target); ``--security-protocol`` (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL; the SASL ones log in with ``--sasl-mechanism``) picks its listener,
with a throwaway CA's certificates (trustme, from the dev extras).

One JSON line per run: ``offered_per_s`` (null for closed loop), ``heartbeats_per_s``,
``p50_ms``, ``p99_ms``, ``max_ms`` and ``server_cpu_pct`` (the CPU time of the server process
and its live children, such as the fsync helper, over the measured window, from /proc; 100 is
one core), with the run's shape. Each run is followed by the same load (same generator, same
members, connections and rate) against the reference server (``echo``: a minimal uvloop
server answering every frame with a fixed, valid heartbeat answer, over the same security
protocol, without SASL): ``echo_heartbeats_per_s``, ``echo_p99_ms`` and ``ratio_to_echo``
(the coordinator's heartbeats/s over the reference's), and ``machine_ns_per_op``
(``storage.machine``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from coordinator.testing import ServerProcess
from storage.machine import KEY, machine_ns_per_op

from .echo import echo_server
from .heartbeat_load import PASSWORD, USER, Plan, create_topic, worker_main
from .wire import run as run_loop
from .workers import run_workers, split, summary

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _certificates(directory: Path) -> tuple[Path, Path]:
    try:
        import trustme
    except ImportError:  # pragma: no cover - the dev extras hold it
        raise SystemExit("bench heartbeats over TLS needs trustme (pip install -e '.[dev]')"
                         ) from None
    ca = trustme.CA()
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        str(directory / "server.pem"))
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    return directory / "server.pem", directory / "ca.pem"


def _plans(bootstrap: str, groups: int, members: int, connections: int, processes: int,
           rate: float | None, ca: str | None, mechanism: str | None, echo: bool = False
           ) -> list[Plan]:
    processes = max(1, min(processes, groups, connections))
    run_id = f"{time.monotonic_ns():x}"  # each run's groups are new ones
    names = [f"bench-hb-{run_id}-{g}" for g in range(groups)]
    plans, first = [], 0
    for count, conns in zip(split(groups, processes), split(connections, processes),
                            strict=True):
        mine = tuple(names[first:first + count])
        first += count
        share = None if rate is None else rate * count / groups
        plans.append(Plan(bootstrap, mine, members, conns, share, ca, mechanism, echo))
    return plans


def measure(bootstrap: str, server_pid: int | None, *, groups: int, members: int,
            connections: int, processes: int, rate: float | None, seconds: float,
            warmup: float, ca: str | None = None, mechanism: str | None = None,
            echo: tuple[str, int] | None = None) -> dict[str, Any]:
    """One run against a running server (its process id for the CPU it used), then the same
    load against the ``echo`` reference server (bootstrap, process id), if given."""
    plans = _plans(bootstrap, groups, members, connections, processes, rate, ca, mechanism)
    run_loop(create_topic(plans[0], members))
    row = _load(plans, server_pid, seconds, warmup)
    if echo is not None:
        reference = _load(_plans(echo[0], groups, members, connections, processes, rate, ca,
                                 None, echo=True), echo[1], seconds, warmup)
        row["echo_heartbeats_per_s"] = reference["heartbeats_per_s"]
        # three significant digits, not decimals: on a starved machine the coordinator's share
        # can be under 0.0005, which three decimals made 0.0
        echo_rate = reference["heartbeats_per_s"]
        row["ratio_to_echo"] = (float(f"{row['heartbeats_per_s'] / echo_rate:.3g}")
                                if echo_rate else None)
        row["echo_p99_ms"] = reference["p99_ms"]
        row["echo_server_cpu_pct"] = reference["server_cpu_pct"]
        if reference["errors"]:
            row["echo_first_error"] = reference["first_error"]
    return {"groups": groups, "members_per_group": members, "connections": connections,
            "processes": len(plans), "seconds": seconds, "offered_per_s": rate, **row,
            KEY: machine_ns_per_op()}


def _load(plans: list[Plan], server_pid: int | None, seconds: float, warmup: float
          ) -> dict[str, Any]:
    outcomes, cpu_pct, cpu_s = run_workers(worker_main, plans, server_pid, seconds, warmup)
    done = summary(outcomes, seconds)
    return {
        "heartbeats": done["answered"],
        "heartbeats_per_s": done["per_s"],
        "p50_ms": done["p50_ms"], "p99_ms": done["p99_ms"], "max_ms": done["max_ms"],
        "server_cpu_pct": cpu_pct, "generator_cpu_pct": done["generator_cpu_pct"],
        "server_cpu_us_per_heartbeat": None if server_pid is None or not done["answered"]
        else round(1e6 * cpu_s / done["answered"], 1),
        "errors": done["errors"], "first_error": done["first_error"],
    }


def server_overrides(security_protocol: str) -> dict[str, str]:
    return {"listeners": f"{security_protocol}://127.0.0.1:0",
            "group.consumer.assignment.interval.ms": "0",
            "group.consumer.assignor.offload.enable": "false",
            "log.cleaner.enable": "false"}


def run_bench(security_protocol: str = "PLAINTEXT", mechanism: str = "SCRAM-SHA-512",
              connections: int = 10, seconds: float = 5.0, warmup: float = 1.0, *,
              groups: int = 10, members: int = 10, processes: int = 1,
              rates: list[float | None] | None = None) -> list[dict[str, Any]] | dict[str, Any]:
    """The server in a child process, then one run per rate (None: closed loop); one row when
    ``rates`` is not given (a closed loop)."""
    with tempfile.TemporaryDirectory(prefix="bench-heartbeats-") as tmp:
        directory = Path(tmp)
        overrides = server_overrides(security_protocol)
        extra: list[str] = []
        ca = None
        if "SSL" in security_protocol:
            keystore, ca_path = _certificates(directory)
            overrides.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore)})
            ca = str(ca_path)
        uses_sasl = security_protocol.startswith("SASL")
        if uses_sasl:
            overrides["sasl.jaas.config"] = (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'user_{USER}="{PASSWORD}";')
            extra = ["--add-scram", f"{mechanism}=[name={USER},password={PASSWORD}]"] \
                if mechanism.startswith("SCRAM") else []
        rows = []
        certificate = overrides.get("ssl.keystore.location")
        with ServerProcess(directory / "data", overrides, extra_args=extra) as server, \
                echo_server(certificate) as reference:
            server.wait_loaded(30)
            assert server.proc is not None
            for rate in rates or [None]:
                row = measure(server.bootstrap, server.proc.pid, groups=groups,
                              members=members, connections=connections, processes=processes,
                              rate=rate, seconds=seconds, warmup=warmup, ca=ca,
                              mechanism=mechanism if uses_sasl else None, echo=reference)
                rows.append({"case": "heartbeats", "security_protocol": security_protocol,
                             "sasl_mechanism": mechanism if uses_sasl else None, **row})
    return rows if rates is not None else rows[0]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--security-protocol", choices=PROTOCOLS, default="PLAINTEXT")
    parser.add_argument("--sasl-mechanism", default="SCRAM-SHA-512",
                        choices=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"))
    parser.add_argument("--groups", type=int, default=10, help="consumer groups")
    parser.add_argument("--members", type=int, default=10, help="members per group")
    parser.add_argument("--connections", type=int, default=10,
                        help="connections the members share")
    parser.add_argument("--processes", type=int, default=1,
                        help="load generator processes (each takes whole groups)")
    parser.add_argument("--rate", type=float, action="append",
                        help="open loop at this many heartbeats/s offered (repeat for several "
                        "runs on the same server); without it, one closed-loop run")
    parser.add_argument("--closed", action="store_true",
                        help="with --rate: a closed-loop run first")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--bootstrap", help="load this running server (PLAINTEXT) instead of "
                        "starting one; its CPU is reported with --server-pid")
    parser.add_argument("--server-pid", type=int)
    parser.add_argument("--json", action="store_true", help="one JSON line per run (the default)")


def run(args: argparse.Namespace) -> int:
    rates: list[float | None] = [None] if args.closed or not args.rate else []
    rates += args.rate or []
    if args.bootstrap:
        with echo_server() as reference:
            for rate in rates:
                print(json.dumps({"case": "heartbeats", **measure(
                    args.bootstrap, args.server_pid, groups=args.groups, members=args.members,
                    connections=args.connections, processes=args.processes, rate=rate,
                    seconds=args.seconds, warmup=args.warmup, echo=reference)}), flush=True)
        return 0
    rows = run_bench(args.security_protocol, args.sasl_mechanism, args.connections,
                     args.seconds, args.warmup, groups=args.groups, members=args.members,
                     processes=args.processes, rates=rates)
    for row in rows if isinstance(rows, list) else [rows]:
        print(json.dumps(row), flush=True)
    return 0
