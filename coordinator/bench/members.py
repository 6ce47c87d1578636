"""``python -m coordinator bench members``: the server's memory with many KIP-848 members.

For each case (``--members`` members in one group, then spread over 100 groups) a new server
(``serve``, Kafka's defaults, unless ``--profile test``) gets the topics (one partition per
member), its resident set is read, and a load generator in a process of its own joins every
member over raw sockets (``storm_client.Member``: heartbeats at the interval the server
gives, acknowledges each assignment at once) until every group is described stable with all
its members reconciled. Meanwhile a probe member of a group of its own, on a connection of its
own in this process, heartbeats every ``PROBE_INTERVAL_S``: its latency says whether the
server kept answering. The server's resident set once the groups are stable, less the one
before the members joined, divided by the members, is the bytes per member.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from coordinator.testing import ServerProcess
from storage.machine import with_machine

from .procfs import status_kb
from .storm import percentile, quiet_collector
from .storm_client import Member, Wire, create_topics, describe_group

PROBE_GROUP = "bench-members-probe"
PROBE_TOPIC = "bench-members-probe"
PROBE_INTERVAL_S = 0.1
ANSWERING_WITHIN_S = 5.0
"""The server counts as answering when no probe heartbeat took longer than this."""
STABLE_TIMEOUT_S = 300.0
CHECK_EVERY_S = 2.0
"""How often the groups are described until stable, at most (small runs check more often;
describing 10,000 members is not free)."""


@dataclass(frozen=True, slots=True)
class CaseResult:
    groups: int
    members: int
    stable_s: float | None
    rss_before_mb: float
    rss_mb: float
    peak_rss_mb: float
    bytes_per_member: int
    probe_heartbeats: int
    probe_p50_ms: float
    probe_p99_ms: float
    probe_max_ms: float
    probe_errors: int
    answering: bool


def rss_kb(server: ServerProcess, field: str = "VmRSS") -> int:
    assert server.proc is not None
    found = status_kb(server.proc.pid, field)
    if found is None:
        raise RuntimeError(f"no {field} in /proc/{server.proc.pid}/status")
    return found


def group_names(groups: int) -> list[str]:
    return [f"bench-members-{g}" for g in range(groups)]


# ------------------------------------------------------------------------------ the load
def _load_main(bootstrap: str, groups: int, members: int, connections: int, join_s: float,
               conn: Connection) -> None:
    asyncio.run(_load(bootstrap, groups, members, connections, join_s, conn))


def _settled(members: list[Member]) -> bool:
    """What the members know: one epoch for all, each assignment acknowledged (cheap: the
    group is described only then)."""
    epochs = {m.epoch for m in members}
    return len(epochs) == 1 and min(epochs) > 0 and all(m.owned_sent for m in members)


async def _stable(wire: Wire, group_id: str, expected: int) -> bool:
    group = await describe_group(wire, group_id)
    return (group.group_state == "Stable" and group.assignment_epoch == group.group_epoch
            and len(group.members) == expected
            and all(m.member_epoch == group.group_epoch for m in group.members))


async def _load(bootstrap: str, groups: int, members: int, connections: int, join_s: float,
                conn: Connection) -> None:
    """Join every member (group g subscribes to topic g), staggered over ``join_s``; report
    the seconds until every group is stable; heartbeat on until told to stop."""
    wires = [await Wire.connect(bootstrap, client_id="bench-members")
             for _ in range(connections)]
    admin = await Wire.connect(bootstrap, client_id="bench-members-admin")
    names = group_names(groups)
    everyone = [Member(wires[i % connections], names[i % groups], (names[i % groups],))
                for i in range(members)]
    began = time.monotonic()
    for i, member in enumerate(everyone):
        member.start(join_s * i / members)
    unsettled: dict[str, list[Member]] = {name: [] for name in names}
    for member in everyone:
        unsettled[member.group_id].append(member)
    stable_s: float | None = None
    check_every_s = min(CHECK_EVERY_S, max(0.2, members / 5000))
    while time.monotonic() - began < STABLE_TIMEOUT_S:
        await asyncio.sleep(check_every_s)
        for name, group in list(unsettled.items()):
            if _settled(group) and await _stable(admin, name, len(group)):
                del unsettled[name]
        if not unsettled:
            stable_s = time.monotonic() - began
            break
    quiet_collector()
    conn.send(stable_s)
    await asyncio.to_thread(conn.recv)  # "stop"
    await asyncio.gather(*(m.stop() for m in everyone))
    for wire in [*wires, admin]:
        await wire.close()


# ------------------------------------------------------------------------------ the probe
class Probe:
    """A member of a one-member group heartbeating every ``PROBE_INTERVAL_S`` on a thread of
    its own (with its own event loop), counting answers and errors."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.latencies: list[tuple[float, float]] = []
        self.errors = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        wire = await Wire.connect(self.bootstrap, client_id="bench-members-probe")
        member = Member(wire, PROBE_GROUP, (PROBE_TOPIC,), self.latencies)
        while not self.stopping.is_set():
            try:
                await asyncio.wait_for(member.heartbeat(), 60)
            except (TimeoutError, ConnectionError, OSError):
                self.errors += 1
            await asyncio.sleep(PROBE_INTERVAL_S)
        await wire.close()

    def __enter__(self) -> Probe:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(70)

    def since(self, started: float) -> list[float]:
        return [ms for at, ms in list(self.latencies) if at >= started]


# ------------------------------------------------------------------------------ a case
async def _create(bootstrap: str, groups: int, members: int) -> None:
    wire = await Wire.connect(bootstrap, client_id="bench-members-admin")
    try:
        await create_topics(wire, [PROBE_TOPIC], 1)
        per_group = -(-members // groups)
        await create_topics(wire, group_names(groups), per_group)
    finally:
        await wire.close()


def run_case(groups: int, members: int, connections: int, join_s: float, hold_s: float,
             profile: str, log: Any) -> CaseResult:
    with tempfile.TemporaryDirectory(prefix="bench-members-") as tmp:
        server = ServerProcess(Path(tmp) / "data", {"metrics.listener": ""},
                               profile=profile).start()
        try:
            server.wait_loaded()
            asyncio.run(_create(server.bootstrap, groups, members))
            time.sleep(1.0)  # let the topic creation's garbage go before the baseline
            before = rss_kb(server)
            with Probe(server.bootstrap) as probe:
                ctx = multiprocessing.get_context("spawn")
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_load_main, daemon=True, args=(
                    server.bootstrap, groups, members, connections, join_s, child))
                started = time.monotonic()
                proc.start()
                stable_s = parent.recv()
                log(f"{groups} group(s), {members} members: "
                    f"{'not stable' if stable_s is None else f'stable after {stable_s:.1f}s'}")
                time.sleep(hold_s)  # steady heartbeats for a while
                after = rss_kb(server)
                peak = rss_kb(server, "VmHWM")
                parent.send("stop")
                proc.join(60)
                latencies = probe.since(started)
            errors = probe.errors
        finally:
            server.stop()
            server.kill()
    worst = max(latencies, default=float("inf"))
    return CaseResult(
        groups=groups, members=members,
        stable_s=None if stable_s is None else round(stable_s, 1),
        rss_before_mb=round(before / 1024, 1), rss_mb=round(after / 1024, 1),
        peak_rss_mb=round(peak / 1024, 1),
        bytes_per_member=round((after - before) * 1024 / members),
        probe_heartbeats=len(latencies),
        probe_p50_ms=round(percentile(latencies, 0.5), 2),
        probe_p99_ms=round(percentile(latencies, 0.99), 2),
        probe_max_ms=round(worst, 2), probe_errors=errors,
        answering=stable_s is not None and errors == 0
        and worst < ANSWERING_WITHIN_S * 1000)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--members", type=int, default=10_000, help="members in each case")
    parser.add_argument("--groups", default="1,100",
                        help="the cases: how many groups the members are spread over")
    parser.add_argument("--connections", type=int, default=100,
                        help="connections the members share")
    parser.add_argument("--join-s", type=float, default=10.0,
                        help="members join spread over this many seconds")
    parser.add_argument("--hold-s", type=float, default=10.0,
                        help="steady heartbeats once stable, before the RSS is read")
    parser.add_argument("--profile", choices=("serve", "test"), default="serve",
                        help="the server's profile (test: 500 ms heartbeats, for a quick run)")
    parser.add_argument("--json", action="store_true", help="one JSON object")


def run(args: argparse.Namespace) -> int:
    def log(text: str) -> None:
        if not args.json:
            print(text, flush=True)

    cases = [run_case(int(g), args.members, args.connections, args.join_s, args.hold_s,
                      args.profile, log) for g in args.groups.split(",")]
    if args.json:
        print(json.dumps(with_machine({"case": "members", "members": args.members,
                                       "profile": args.profile,
                                       "cases": [asdict(c) for c in cases]})))
    else:
        for c in cases:
            print(f"{c.groups:4} group(s) x {c.members // c.groups} members: RSS "
                  f"{c.rss_before_mb} -> {c.rss_mb} MB (peak {c.peak_rss_mb}), "
                  f"{c.bytes_per_member} bytes/member; probe heartbeat p50 {c.probe_p50_ms} ms, "
                  f"p99 {c.probe_p99_ms} ms, max {c.probe_max_ms} ms, errors "
                  f"{c.probe_errors}; answering: {c.answering}")
    return 0 if all(c.answering for c in cases) else 1
