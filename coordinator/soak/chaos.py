"""``python -m coordinator soak chaos``: real clients while the server is killed -9 in a loop.

The server (``serve --profile test``) runs as a child process. The load (``soak/clients.py``):
an idempotent ``acks=all`` producer, a consumer-protocol group and a classic group of
confluent-kafka consumers that consume and commit, kafka-python members joining and leaving a
third group. Every ``--min-interval-s`` to ``--max-interval-s`` seconds (random, ``--seed``)
after the last restart, and not before both groups were described stable again (at most
``CONVERGE_TIMEOUT_S`` after the kill: on a loaded machine the groups take longer than the
interval to come back, and a kill before then would find nothing to measure), the server gets
SIGKILL and is started again on the same data and ports. After each restart two times are
taken from the kill: until both groups are described stable again, with every member back and
every partition assigned once (``reconverge``), and until every consumer has had a commit
acknowledged again (``resume``, until the next kill); then the committed offsets are read back
and compared with the commits acknowledged before the kill.
At the end the load stops, the server is killed once more, and every acknowledged commit and
record is looked for. One JSON line; the exit code is 1 when anything acknowledged was lost.

With ``--brokers N`` (N > 1) the server is a cluster of N brokers (``cluster.brokers``), the
topic is replicated to min(N, 3) of them, the clients bootstrap from every broker, and the kill
is one fault among others (``soak/cluster_faults.py``): a broker stopped or started again, a
broker's connections dropped, a group's coordinator or a partition's leader moved, through the
control endpoint. After every
fault the same two times are taken and the acknowledged commits are read back.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.bench.procfs import status_kb
from coordinator.testing import ServerProcess
from coordinator.testing.brokers import Brokers
from coordinator.testing.control_client import ControlError

from . import clients, cluster_faults, readback
from .journal import CommitKey, Journal, lost_commits, percentile, record_losses

TOPIC = "chaos"
CONSUMER_GROUP = "chaos-consumer"
CLASSIC_GROUP = "chaos-classic"
CHURN_GROUP = "chaos-churn"
CONVERGE_TIMEOUT_S = 60.0
POLL_S = 0.1


@dataclass
class Settings:
    minutes: float = 10.0
    kills: int | None = None
    """Set: the loop ends after this many kills (faults of any kind, with ``brokers`` > 1)
    instead of after ``minutes`` (a slow machine's
    restarts then make the run longer, not the kills fewer)."""
    seed: int = 0
    min_interval_s: float = 2.0
    max_interval_s: float = 10.0
    partitions: int = 6
    members: int = 3
    churners: int = 1
    rate: float = 200.0
    commit_interval_s: float = 0.5
    data_dir: Path | None = None
    brokers: int = 1


@dataclass
class Outcome:
    kills: int = 0
    reconverge_s: list[float] = field(default_factory=list)
    resume_s: list[float] = field(default_factory=list)
    unconverged: int = 0
    unresumed: int = 0
    lost_commits_after_kills: int = 0
    max_rss_kb: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    resume_by_fault: dict[str, list[float]] = field(default_factory=dict)


def server_peak_rss_kb(server: ServerProcess) -> int:
    """The server's peak resident set (VmHWM), 0 if it cannot be read."""
    if server.proc is None:
        return 0
    try:
        return status_kb(server.proc.pid, "VmHWM") or 0
    except OSError:
        return 0


class Soak:
    def __init__(self, settings: Settings, data_dir: Path) -> None:
        self.settings = settings
        self.rng = random.Random(settings.seed)
        cluster = {"cluster.brokers": str(settings.brokers)} if settings.brokers > 1 else None
        self.server = ServerProcess(data_dir, cluster, profile="test")
        self.journal = Journal()
        self.errors = clients.Errors()
        self.progress = clients.Progress()
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.outcome = Outcome()
        self.consumers = [f"{group}-{n}" for group in (CONSUMER_GROUP, CLASSIC_GROUP)
                          for n in range(settings.members)]
        self.admin: Any = None

    # ---------------------------------------------------------------- load
    def _thread(self, name: str, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    @property
    def bootstrap(self) -> str:
        """Every broker, so a client finds the cluster through any that is running."""
        return self.server.bootstrap_servers

    def start_load(self) -> None:
        s, bootstrap = self.settings, self.bootstrap
        self._thread("producer", clients.produce, bootstrap, TOPIC, s.rate, self.journal,
                     self.errors, self.stop, f"seed{s.seed}")
        for group, protocol in ((CONSUMER_GROUP, "consumer"), (CLASSIC_GROUP, "classic")):
            for n in range(s.members):
                self._thread(f"{group}-{n}", clients.consume, bootstrap, TOPIC, group, protocol,
                             f"{group}-{n}", self.journal, self.progress, self.errors,
                             self.stop, s.commit_interval_s)
        for n in range(s.churners):
            self._thread(f"churn-{n}", clients.churn, bootstrap, TOPIC, CHURN_GROUP,
                         f"churn-{n}", s.seed * 1000 + n, self.journal, self.progress, self.errors,
                         self.stop)

    def stop_load(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(150)

    # ---------------------------------------------------------------- convergence
    def stable(self) -> bool:
        groups = {CONSUMER_GROUP: self.settings.members, CLASSIC_GROUP: self.settings.members}
        return readback.groups_stable(self.admin, groups, self.settings.partitions)

    def resumed(self, since: float) -> bool:
        return self.progress.all_committed_since(self.consumers, since)

    def convergence_report(self, since: float) -> str:
        """What the groups and consumers are doing now (for a window that ended unconverged):
        each group as described, the consumers without a commit acknowledged since ``since``,
        and the errors the load has seen."""
        described = readback.describe_groups(self.admin, [CONSUMER_GROUP, CLASSIC_GROUP])
        return (f"groups {described}; not committed since: "
                f"{self.progress.not_committed_since(self.consumers, since)}; client errors "
                f"{dict(self.errors.counts.most_common(8))}")

    def wait_converged(self, since: float, until: float, settled_by: float | None = None
                       ) -> tuple[float | None, float | None]:
        """Seconds from ``since`` to when both groups were seen stable, and to when every
        consumer had a commit acknowledged again (None: not seen); waits until both were seen
        or ``until``, with ``settled_by`` only until then once the groups were seen stable.
        Samples the server's peak RSS meanwhile."""
        stable_s: float | None = None
        resumed_s: float | None = None
        while time.monotonic() < until and (stable_s is None or resumed_s is None):
            if (settled_by is not None and stable_s is not None
                    and time.monotonic() >= settled_by):
                break
            self.outcome.max_rss_kb = max(self.outcome.max_rss_kb,
                                          server_peak_rss_kb(self.server))
            if stable_s is None and self.stable():
                stable_s = time.monotonic() - since
            if resumed_s is None and self.resumed(since):
                resumed_s = time.monotonic() - since
            if stable_s is None or resumed_s is None:
                time.sleep(POLL_S)
        return stable_s, resumed_s

    # ---------------------------------------------------------------- kills
    def kill_and_restart(self) -> tuple[float, dict[CommitKey, int]]:
        """SIGKILL and restart on the same data; returns when the kill happened (monotonic)
        and the commits acknowledged before it."""
        self.outcome.max_rss_kb = max(self.outcome.max_rss_kb, server_peak_rss_kb(self.server))
        acked = self.journal.commits_snapshot()
        killed_at = time.monotonic()
        self.server.restart()
        self.outcome.kills += 1
        self.renew_admin()
        return killed_at, acked

    def renew_admin(self) -> None:
        """A new admin client for what follows a fault (librdkafka's keeps a group's
        coordinator after NOT_COORDINATOR; one whose connection died can wait seconds before it
        asks again); the old one is destroyed in the background (``destroy_in_background``)."""
        old = [self.admin]
        self.admin = readback.admin_client(self.bootstrap)
        readback.destroy_in_background(old)

    def brokers(self) -> Brokers:
        url = self.server.control_url
        assert url is not None, "the test profile has the control endpoint on"
        return Brokers(url)

    def cluster_fault(self) -> tuple[str, float, dict[CommitKey, int]]:
        """One fault of the cluster mode's schedule, applied: its kind, when it happened
        (monotonic) and the commits acknowledged before it."""
        brokers = self.brokers()
        states = {int(entry["id"]): entry.get("state") for entry in brokers.list()}
        fault = cluster_faults.next_fault(
            self.rng, [b for b, state in states.items() if state == "running"],
            [b for b, state in states.items() if state != "running"],
            [CONSUMER_GROUP, CLASSIC_GROUP, CHURN_GROUP], self.settings.partitions)
        if fault.kind == cluster_faults.KILL:
            return (cluster_faults.KILL, *self.kill_and_restart())
        acked = self.journal.commits_snapshot()
        at = time.monotonic()
        assert fault.broker is not None
        try:
            if fault.kind == cluster_faults.STOP:
                brokers.stop(fault.broker)
            elif fault.kind == cluster_faults.START:
                brokers.start(fault.broker)
            elif fault.kind == cluster_faults.DISCONNECT:
                brokers.disconnect(fault.broker)
            elif fault.kind == cluster_faults.COORDINATOR:
                assert fault.group is not None
                brokers.move_coordinator(fault.group, fault.broker)
            else:
                assert fault.partition is not None
                brokers.move_leader(TOPIC, fault.partition, fault.broker)
        except ControlError as exc:
            self.outcome.refused[fault.kind] += 1
            print(f"soak chaos: {fault.describe()} refused: {exc}", file=sys.stderr)
        else:
            self.outcome.faults[fault.kind] += 1
        self.renew_admin()
        return fault.kind, at, acked

    def check_commits(self, acked: dict[CommitKey, int]) -> int:
        """Commits acknowledged before a fault that read back older now."""
        committed = readback.committed_offsets(
            self.admin, [CONSUMER_GROUP, CLASSIC_GROUP, CHURN_GROUP], TOPIC,
            self.settings.partitions)
        lost = lost_commits(acked, committed)
        if lost:
            older = sorted((key, offset, committed.get(key)) for key, offset in acked.items()
                           if committed.get(key, -1) < offset)
            print(f"soak chaos: after fault {sum(self.outcome.faults.values())} (kill "
                  f"{self.outcome.kills}): {lost} acknowledged commits read back older (key, "
                  f"acknowledged, read back): {older}", file=sys.stderr)
        return lost

    def record_convergence(self, stable_s: float | None, resumed_s: float | None) -> None:
        o = self.outcome
        if stable_s is None:
            o.unconverged += 1
        else:
            o.reconverge_s.append(stable_s)
        if resumed_s is None:
            o.unresumed += 1
        else:
            o.resume_s.append(resumed_s)

    def kill_loop(self, deadline: float) -> None:
        s = self.settings
        faults = 0
        while (faults < s.kills if s.kills is not None else time.monotonic() < deadline):
            if s.brokers > 1:
                kind, killed_at, acked = self.cluster_fault()
            else:
                kind, (killed_at, acked) = cluster_faults.KILL, self.kill_and_restart()
            faults += 1
            # counted from the restart, as documented: on a slow machine a restart takes
            # seconds, which would otherwise leave the groups no time to come back; and no
            # earlier than the groups came back (a condition, not a time: on a loaded machine
            # the coordinator partitions alone can take seconds to load after a restart)
            next_kill = time.monotonic() + self.rng.uniform(s.min_interval_s, s.max_interval_s)
            stable_s, resumed_s = self.wait_converged(
                killed_at, killed_at + CONVERGE_TIMEOUT_S, settled_by=next_kill)
            self.record_convergence(stable_s, resumed_s)
            if stable_s is None:
                print(f"soak chaos: the groups not stable {CONVERGE_TIMEOUT_S}s after fault "
                      f"{faults} ({kind}): {self.convergence_report(killed_at)}",
                      file=sys.stderr)
            if kind == cluster_faults.KILL:
                self.outcome.faults[kind] += 1
            if resumed_s is not None:
                self.outcome.resume_by_fault.setdefault(kind, []).append(resumed_s)
            self.outcome.lost_commits_after_kills += self.check_commits(acked)
            while time.monotonic() < next_kill:
                self.outcome.max_rss_kb = max(self.outcome.max_rss_kb,
                                              server_peak_rss_kb(self.server))
                time.sleep(min(0.5, max(0.0, next_kill - time.monotonic())))

    # ---------------------------------------------------------------- the run
    def run(self) -> dict[str, Any]:
        s = self.settings
        self.server.start()
        self.server.wait_loaded()
        try:
            self.renew_admin()
            from confluent_kafka.admin import NewTopic

            replicas = min(s.brokers, 3)
            self.admin.create_topics([NewTopic(TOPIC, s.partitions, replicas)])[TOPIC].result(30)
            self.start_load()
            started = time.monotonic()
            if None in self.wait_converged(started, started + CONVERGE_TIMEOUT_S):
                raise RuntimeError(f"the groups did not form within {CONVERGE_TIMEOUT_S}s: "
                                   f"{self.convergence_report(started)}")
            self.kill_loop(started + s.minutes * 60.0)
            settled = time.monotonic()  # the load catches up before it stops
            self.wait_converged(settled, settled + CONVERGE_TIMEOUT_S)
            self.stop_load()
            return self.verify()
        except BaseException:
            print("soak chaos: failed; the server's last log lines:\n"
                  + "".join(self.server.output().splitlines(keepends=True)[-80:]),
                  file=sys.stderr)
            raise
        finally:
            self.server.stop()
            self.server.kill()
            admin, self.admin = [self.admin], None
            readback.destroy_in_background(admin)

    def verify(self) -> dict[str, Any]:
        """A last kill, then every acknowledged commit and record looked for."""
        acked = self.journal.commits_snapshot()
        self.outcome.max_rss_kb = max(self.outcome.max_rss_kb, server_peak_rss_kb(self.server))
        self.kill_and_restart()
        self.server.wait_loaded()
        committed = readback.committed_offsets(
            self.admin, [CONSUMER_GROUP, CLASSIC_GROUP, CHURN_GROUP], TOPIC,
            self.settings.partitions)
        stored = readback.read_topic(self.bootstrap, TOPIC, self.settings.partitions)
        lost_records, duplicates = record_losses(self.journal.acked_values, stored)
        o = self.outcome
        p50, p99, resume50, resume99 = (percentile(samples, q) for samples in
                                        (o.reconverge_s, o.resume_s) for q in (0.5, 0.99))
        return {
            "acked_commits": self.journal.commits,
            "lost_commits": o.lost_commits_after_kills + lost_commits(acked, committed),
            "acked_records": self.journal.records,
            "lost_records": lost_records,
            "duplicate_records": duplicates,
            "kills": o.kills,
            "brokers": self.settings.brokers,
            "faults": dict(sorted(o.faults.items())),
            "refused_faults": dict(sorted(o.refused.items())),
            "reconverge_p50_s": None if p50 is None else round(p50, 3),
            "reconverge_p99_s": None if p99 is None else round(p99, 3),
            "max_rss_mb": round(o.max_rss_kb / 1024, 1),
            "unconverged": o.unconverged,
            "resume_p50_s": None if resume50 is None else round(resume50, 3),
            "resume_p99_s": None if resume99 is None else round(resume99, 3),
            "resume_p99_s_by_fault": {
                kind: round(percentile(samples, 0.99) or 0.0, 3)
                for kind, samples in sorted(o.resume_by_fault.items())},
            "unresumed": o.unresumed,
            "stored_records": sum(stored.values()),
            "churn_members_joined": self.progress.joined,
            "minutes": self.settings.minutes,
            "seed": self.settings.seed,
            "client_errors": dict(self.errors.counts.most_common(12)),
        }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the kills go on")
    parser.add_argument("--kills", type=int, default=None,
                        help="end after this many kills (faults, with --brokers) instead of "
                             "after --minutes")
    parser.add_argument("--seed", type=int, default=0, help="seeds the kill intervals")
    parser.add_argument("--min-interval-s", type=float, default=2.0,
                        help="shortest time from a restart to the next kill")
    parser.add_argument("--max-interval-s", type=float, default=10.0,
                        help="longest time from a restart to the next kill")
    parser.add_argument("--partitions", type=int, default=6, help="partitions of the topic")
    parser.add_argument("--rate", type=float, default=200.0, help="records produced per second")
    parser.add_argument("--brokers", type=int, default=1,
                        help="brokers of the server (cluster.brokers); above 1, broker stops "
                             "and starts, coordinator and leader moves join the kills")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="the server's store (default: a temporary directory)")
    parser.add_argument("--json", action="store_true", help="one JSON line (the default)")


def settings_from(args: argparse.Namespace) -> Settings:
    if not 0 < args.min_interval_s <= args.max_interval_s:
        raise SystemExit("soak chaos: need 0 < --min-interval-s <= --max-interval-s")
    if args.brokers < 1:
        raise SystemExit("soak chaos: need --brokers 1 or more")
    if args.kills is not None and args.kills < 1:
        raise SystemExit("soak chaos: need --kills >= 1")
    return Settings(minutes=args.minutes, kills=args.kills, seed=args.seed,
                    min_interval_s=args.min_interval_s, max_interval_s=args.max_interval_s,
                    partitions=args.partitions, rate=args.rate, data_dir=args.data_dir,
                    brokers=args.brokers)


def run_soak(settings: Settings) -> dict[str, Any]:
    if settings.data_dir is not None:
        return Soak(settings, settings.data_dir).run()
    with tempfile.TemporaryDirectory(prefix="soak-chaos-") as tmp:
        return Soak(settings, Path(tmp) / "data").run()


def run(args: argparse.Namespace) -> int:
    result = run_soak(settings_from(args))
    print(json.dumps(result), flush=True)
    lost = result["lost_commits"] + result["lost_records"]
    return 1 if lost else 0
