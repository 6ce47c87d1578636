"""``python -m coordinator bench storm``: does a churning large group hurt everyone else?

The server runs in a child process; the load generator here speaks the protocol with our codec
over raw sockets. One large group (default 1,000 members over 1,000 topics and 50,000
partitions, heterogeneous overlapping subscriptions) keeps losing and gaining members, while
50 bystander groups of 5 members heartbeat normally from a second process (so their latency is
measured by a process that does nothing else). Three settings run in turn on the same server
and group, switched through the large group's own configs (IncrementalAlterConfigs):
(interval 0, offload off), (interval 1000, offload off), (interval 1000, offload on). For each:
the bystanders' heartbeat latency p50/p99/max over the phase, and the large group's time from
the end of its churn to a stable assignment. Before the large group joins, a no-churn phase
as long as each setting's (the bystanders alone) is the run's reference: each churn row's
``bystander_p99_vs_no_churn`` is its bystander p99 over the no-churn p99. Each setting starts
with the bystanders spread over their heartbeat interval again: clients heartbeat an interval
after each answer, so a long stall in one setting bunches them, and the bunch (each waiting
for the others' answers) would carry into the next setting's numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import tempfile
import time
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from coordinator.testing import ServerProcess
from storage.machine import KEY, machine_ns_per_op

from .request_loop import quiet_collector
from .storm_client import Member, Wire, create_topics, describe_group, set_group_configs

SETTINGS = "0:off,1000:off,1000:on"
LARGE_GROUP = "storm-large"
BUCKETS = 5
BYSTANDER_HEARTBEAT_S = 1.0


@dataclass(frozen=True, slots=True)
class PhaseResult:
    interval_ms: int
    offload: bool
    bystander_p50_ms: float
    bystander_p99_ms: float
    bystander_max_ms: float
    large_group_stable_s: float | None
    bystander_samples: int
    churn_events: int
    large_group_heartbeats_per_s: float = 0.0
    """The large group's heartbeats over the phase (its churn and the heartbeats the server
    asked for with shortened intervals while a target was pending: bounded, issue 24)."""


@dataclass(frozen=True, slots=True)
class Baseline:
    """The no-churn phase: the bystanders alone on the server, in the same run."""

    bystander_p50_ms: float
    bystander_p99_ms: float
    bystander_max_ms: float
    bystander_samples: int


def versus(p99_ms: float, baseline: Baseline) -> float | None:
    """A churn phase's bystander p99 as a multiple of the no-churn p99."""
    if not baseline.bystander_p99_ms > 0:  # (also NaN: no samples)
        return None
    return round(p99_ms / baseline.bystander_p99_ms, 2)


# ------------------------------------------------------------------------------ inputs
def parse_settings(text: str) -> list[tuple[int, bool]]:
    out = []
    for item in text.split(","):
        interval, _, offload = item.partition(":")
        out.append((int(interval), offload.strip().lower() in ("on", "true", "1")))
    return out


def subscriptions(topics: list[str], members: int, distinct: int, seed: int = 0
                  ) -> list[tuple[str, ...]]:
    """Member i's topics: its bucket's topics (a fifth of all) plus a few random others, from
    ``distinct`` patterns, so subscriptions overlap and the group is one heterogeneous
    component (the expensive case of the uniform assignor)."""
    rng = random.Random(seed)
    buckets = min(BUCKETS, len(topics))
    size = -(-len(topics) // buckets)
    extra = max(1, len(topics) // 100)
    patterns = []
    for k in range(max(1, min(distinct, members))):
        bucket = topics[(k % buckets) * size:(k % buckets + 1) * size]
        others = [t for t in topics if t not in set(bucket)]
        chosen = set(bucket) | set(rng.sample(others, min(extra, len(others))))
        patterns.append(tuple(sorted(chosen)))
    return [patterns[i % len(patterns)] for i in range(members)]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


# ------------------------------------------------------------------------------ bystanders
def _bystanders_main(bootstrap: str, groups: int, members: int, conn: Connection) -> None:
    asyncio.run(_bystanders(bootstrap, groups, members, conn))


async def _bystanders(bootstrap: str, groups: int, members: int, conn: Connection) -> None:
    latencies: list[tuple[float, float]] = []
    everyone: list[Member] = []
    rng = random.Random(7)
    admin = await Wire.connect(bootstrap)
    for g in range(groups):
        group_id = f"storm-bystander-{g}"
        await set_group_configs(admin, group_id, {
            "consumer.heartbeat.interval.ms": str(int(BYSTANDER_HEARTBEAT_S * 1000))})
        for _ in range(members):
            member = Member(await Wire.connect(bootstrap), group_id, (f"bystander-{g}",),
                            latencies)
            everyone.append(member)
            member.start(rng.uniform(0.0, BYSTANDER_HEARTBEAT_S))
    await asyncio.sleep(2 * BYSTANDER_HEARTBEAT_S)
    quiet_collector()
    conn.send("ready")
    while await asyncio.to_thread(conn.recv) == "restagger":  # until "stop"
        for member in everyone:
            member.restagger(rng.uniform(0.0, BYSTANDER_HEARTBEAT_S))
    await asyncio.gather(*(m.stop() for m in everyone))
    conn.send(latencies)
    for member in everyone:
        await member.wire.close()
    await admin.close()


# ------------------------------------------------------------------------------ the large group
class LargeGroup:
    def __init__(self, conns: list[Wire], subs: list[tuple[str, ...]], seed: int = 1) -> None:
        self.conns = conns
        self.subs = subs
        self.rng = random.Random(seed)
        self.members: list[Member] = []
        self.churned = 0
        self.heartbeats: list[tuple[float, float]] = []
        """(when, ms) of every heartbeat the large group's members sent."""

    def _new(self, index: int) -> Member:
        member = Member(self.conns[index % len(self.conns)], LARGE_GROUP, self.subs[index],
                        self.heartbeats)
        member.start()
        return member

    def join_all(self) -> None:
        self.members = [self._new(i) for i in range(len(self.subs))]

    async def churn(self, until: float, per_s: float) -> None:
        """Until ``until``: a random member leaves and a new one with its subscription joins,
        ``per_s`` times a second (slower when the server is slow to answer the leave)."""
        period = 1.0 / per_s
        while time.monotonic() < until:
            began = time.monotonic()
            index = self.rng.randrange(len(self.members))
            await self.members[index].leave()
            self.members[index] = self._new(index)
            self.churned += 1
            await asyncio.sleep(max(0.0, period - (time.monotonic() - began)))

    async def wait_stable(self, admin: Wire, timeout_s: float) -> float | None:
        began = time.monotonic()
        while time.monotonic() - began < timeout_s:
            group = await describe_group(admin, LARGE_GROUP)
            if (group.group_state == "Stable" and group.assignment_epoch == group.group_epoch
                    and len(group.members) == len(self.members)):
                return time.monotonic() - began
            await asyncio.sleep(0.25)
        return None

    async def stop(self) -> None:
        await asyncio.gather(*(m.stop() for m in self.members))


# ------------------------------------------------------------------------------ the run
async def _run(args: argparse.Namespace, bootstrap: str, log: Any
               ) -> tuple[Baseline, list[PhaseResult]]:
    admin = await Wire.connect(bootstrap)
    names = [f"storm-{i}" for i in range(args.topics)]
    began = time.monotonic()
    await create_topics(admin, names, args.partitions_per_topic)
    await create_topics(admin, [f"bystander-{g}" for g in range(args.bystander_groups)], 4)
    log(f"created {args.topics} topics x {args.partitions_per_topic} partitions in "
        f"{time.monotonic() - began:.1f}s")

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_bystanders_main, daemon=True,
                       args=(bootstrap, args.bystander_groups, args.bystander_members, child))
    proc.start()
    await asyncio.to_thread(parent.recv)  # "ready"
    log(f"{args.bystander_groups} bystander groups x {args.bystander_members} members running")

    # the reference: the bystanders alone, before the large group exists
    parent.send("restagger")
    await asyncio.sleep(BYSTANDER_HEARTBEAT_S)
    quiet = time.monotonic()
    await asyncio.sleep(args.duration_s)
    log(f"no-churn phase: the bystanders alone for {args.duration_s:g}s")

    conns = [await Wire.connect(bootstrap) for _ in range(args.connections)]
    group = LargeGroup(conns, subscriptions(names, args.members, args.distinct_subscriptions))
    await set_group_configs(admin, LARGE_GROUP, {"consumer.assignment.interval.ms": "1000",
                                                 "consumer.assignor.offload.enable": "true"})
    began = time.monotonic()
    group.join_all()
    formed = await group.wait_stable(admin, args.stable_timeout_s)
    quiet_collector()
    log(f"large group of {args.members} formed: stable after "
        f"{'timeout' if formed is None else f'{time.monotonic() - began:.1f}s'}")

    phases = []
    for interval, offload in parse_settings(args.settings):
        await set_group_configs(admin, LARGE_GROUP, {
            "consumer.assignment.interval.ms": str(interval),
            "consumer.assignor.offload.enable": "true" if offload else "false"})
        parent.send("restagger")
        await asyncio.sleep(BYSTANDER_HEARTBEAT_S)  # every bystander took its new phase
        start = time.monotonic()
        before = group.churned
        await group.churn(start + args.duration_s, args.churn_per_s)
        stable = await group.wait_stable(admin, args.stable_timeout_s)
        phases.append((interval, offload, start, start + args.duration_s, stable,
                       group.churned - before))
        log(f"phase interval={interval} offload={offload}: {group.churned - before} churns, "
            f"stable {'timeout' if stable is None else f'{stable:.1f}s'}")

    await group.stop()
    parent.send("stop")
    latencies: list[tuple[float, float]] = await asyncio.to_thread(parent.recv)
    proc.join(30)
    for conn in conns:
        await conn.close()
    await admin.close()

    window = [ms for t, ms in latencies if quiet <= t <= quiet + args.duration_s]
    baseline = Baseline(round(percentile(window, 0.50), 2), round(percentile(window, 0.99), 2),
                        round(max(window, default=float("nan")), 2), len(window))
    results = []
    for interval, offload, start, end, stable, churns in phases:
        window = [ms for t, ms in latencies if start <= t <= end]
        large = sum(1 for t, _ in group.heartbeats if start <= t <= end)
        results.append(PhaseResult(
            interval, offload, round(percentile(window, 0.50), 2),
            round(percentile(window, 0.99), 2), round(max(window, default=float("nan")), 2),
            None if stable is None else round(stable, 2), len(window), churns,
            round(large / max(end - start, 1e-9), 1)))
    return baseline, results


def server_overrides(args: argparse.Namespace) -> dict[str, str]:
    return {
        "group.consumer.min.heartbeat.interval.ms": "500",
        "group.consumer.heartbeat.interval.ms": str(args.heartbeat_interval_ms),
        "group.coordinator.background.threads": str(args.background_threads),
        "coordinator.log.flush.interval.ms": str(args.flush_interval_ms),
        "log.cleaner.enable": "false",
    }


def table(baseline: Baseline, results: list[PhaseResult]) -> str:
    head = (f"{'interval_ms':>11} {'offload':>7} {'p50 ms':>8} {'p99 ms':>8} {'x no-churn':>10} "
            f"{'max ms':>8} {'stable s':>9} {'samples':>8} {'churns':>7} {'large hb/s':>10}")
    b = baseline
    rows = [head, f"{'no-churn':>19} {b.bystander_p50_ms:>8.2f} {b.bystander_p99_ms:>8.2f} "
                  f"{1.0:>10.2f} {b.bystander_max_ms:>8.2f} {'':>9} {b.bystander_samples:>8}"]
    for r in results:
        stable = "timeout" if r.large_group_stable_s is None else f"{r.large_group_stable_s:.2f}"
        ratio = versus(r.bystander_p99_ms, baseline)
        rows.append(f"{r.interval_ms:>11} {('on' if r.offload else 'off'):>7} "
                    f"{r.bystander_p50_ms:>8.2f} {r.bystander_p99_ms:>8.2f} "
                    f"{'-' if ratio is None else f'{ratio:.2f}':>10} "
                    f"{r.bystander_max_ms:>8.2f} {stable:>9} {r.bystander_samples:>8} "
                    f"{r.churn_events:>7} {r.large_group_heartbeats_per_s:>10.1f}")
    rows.append(f"machine: {machine_ns_per_op()} ns/op")
    return "\n".join(rows)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions-per-topic", type=int, default=50)
    parser.add_argument("--duration-s", type=float, default=30.0,
                        help="how long the large group churns in each setting")
    parser.add_argument("--churn-per-s", type=float, default=2.0,
                        help="member replacements (a leave and a join) per second")
    parser.add_argument("--bystander-groups", type=int, default=50)
    parser.add_argument("--bystander-members", type=int, default=5)
    parser.add_argument("--distinct-subscriptions", type=int, default=20)
    parser.add_argument("--connections", type=int, default=50,
                        help="connections the large group's members share")
    parser.add_argument("--heartbeat-interval-ms", type=int, default=5000,
                        help="the broker's heartbeat interval (bystanders use 1000 ms)")
    parser.add_argument("--background-threads", type=int, default=2)
    parser.add_argument("--flush-interval-ms", type=int, default=0,
                        help="coordinator.log.flush.interval.ms (0: fsync before answering)")
    parser.add_argument("--stable-timeout-s", type=float, default=300.0)
    parser.add_argument("--log-dir", help="keep the server's data here (default: a temp dir)")
    parser.add_argument("--bootstrap", help="use this running server (started with the "
                        "overrides above) instead of starting one")
    parser.add_argument("--settings", default=SETTINGS,
                        help="interval_ms:offload pairs to run, in order")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per setting per line instead of the table")


def run(args: argparse.Namespace) -> int:
    def log(text: str) -> None:
        if not args.json:
            print(f"# {text}", flush=True)

    if args.bootstrap:
        return _report(args, *asyncio.run(_run(args, args.bootstrap, log)))
    with tempfile.TemporaryDirectory(prefix="storm-") as tmp:
        log_dir = Path(args.log_dir) if args.log_dir else Path(tmp)
        server = ServerProcess(log_dir, server_overrides(args)).start(timeout=120)
        try:
            baseline, results = asyncio.run(_run(args, server.bootstrap, log))
        finally:
            server.stop(60)
    return _report(args, baseline, results)


def rows(baseline: Baseline, results: list[PhaseResult]) -> list[dict[str, Any]]:
    """The JSON rows: the no-churn phase, then one per churn setting."""
    out: list[dict[str, Any]] = [{"phase": "no-churn", **asdict(baseline),
                                  KEY: machine_ns_per_op()}]
    for result in results:
        row = asdict(result)
        out.append({"phase": "churn", **{k: row[k] for k in (
            "interval_ms", "offload", "bystander_p50_ms", "bystander_p99_ms")},
            "bystander_p99_vs_no_churn": versus(result.bystander_p99_ms, baseline),
            **{k: row[k] for k in ("bystander_max_ms", "large_group_stable_s",
                                   "large_group_heartbeats_per_s", "bystander_samples",
                                   "churn_events")},
            KEY: machine_ns_per_op()})
    return out


def _report(args: argparse.Namespace, baseline: Baseline, results: list[PhaseResult]) -> int:
    if args.json:
        for row in rows(baseline, results):
            print(json.dumps(row), flush=True)
    else:
        print(table(baseline, results))
    return 0
