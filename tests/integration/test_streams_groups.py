"""KIP-1071 streams groups end to end: protocol-level Kafka Streams instances
(``streams_member``, one per process, every frame cross-checked against kio) against a real
server over TCP.

1. a two-subtopology application scales 1 -> 3 -> 2 instances with one standby replica (group
   config through IncrementalAlterConfigs): the internal topics are created with the decided
   partition counts, MISSING_INTERNAL_TOPICS is reported until then, no task is ever active on
   two members at once and no process holds a task twice (replayed from the members' own
   output in time order), every task is assigned once stable;
2. an instance killed with SIGKILL (and restarted at once with its process id): its tasks
   move after the session timeout, not before; one paused (SIGSTOP) past its session learns
   it was fenced (UNKNOWN_MEMBER_ID), drops its tasks and rejoins; one that does not revoke
   within its rebalance timeout is fenced and its tasks go to the other member;
3. statuses: STALE_TOPOLOGY for a member behind the group's topology epoch,
   MISSING_SOURCE_TOPICS until the source topic exists, SHUTDOWN_APPLICATION from one member
   seen by every member (and forgotten once the group is empty);
4. StreamsGroupDescribe (topology, members, tasks, process ids, endpoints) and the heartbeat's
   PartitionsByUserEndpoint against the members' tasks, with two members of one process;
5. seed 000: the initial rebalance delay and the assignment interval space the target
   assignments (StreamsGroupTargetAssignmentMetadata timestamps in the log), ASSIGNMENT_DELAYED
   meanwhile, the runs go through the background executor;
6. the streams records (types 17, 19-23) in the log against Kafka 4.3's record schemas and
   against what the members sent and were given;
7. malformed or refused heartbeats get Kafka 4.3's error codes and messages.

Every instance's output is checked at the end (``App.check``): no frame that does not
round-trip through kio, statuses in Kafka's order, task lists on every join answer,
PartitionsByUserEndpoint exactly when the endpoint epoch moved, and the replay above.
"""

from __future__ import annotations

import bisect
import datetime
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from kio.static.primitive import i32, i64

from tests.harness import ServerProcess, free_port, wait_until
from tests.integration.metrics_scenario import scrape, total
from tests.integration.streams_member import (
    ASSIGNMENT_DELAYED,
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
    KioConnection,
    describe,
    hb_request,
    topology,
)

ROOT = Path(__file__).resolve().parents[2]
HEARTBEAT_MS = 300
SESSION_MS = 10000
OVERRIDES = {
    "group.streams.heartbeat.interval.ms": str(HEARTBEAT_MS),
    "group.streams.min.heartbeat.interval.ms": "100",
    "group.streams.session.timeout.ms": str(SESSION_MS),
    "group.streams.min.session.timeout.ms": "1000",
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
}
PARTITIONS = 4
INITIAL_DELAY_DETAIL = "Assignment delayed due to the configured initial rebalance delay."
INTERVAL_DETAIL = "Assignment delayed due to the configured assignment interval."
IN_FLIGHT_DETAIL = "Assignment delayed due to an in-flight assignment computation."

Task = tuple[str, int]
ROLES = ("active", "standby", "warmup")


def app_topology(app: str, source: str = "input", epoch: int = 0) -> dict[str, Any]:
    """Subtopology 0 reads ``source`` and writes ``<app>-repartition``; subtopology 1 reads it
    back (partition count unset: derived) and keeps a store (``<app>-store-changelog``)."""
    return {"epoch": epoch, "subtopologies": [
        {"id": "0", "source": [source], "sink": [f"{app}-repartition"]},
        {"id": "1", "repartition_source": [{"name": f"{app}-repartition", "partitions": 0}],
         "changelog": [f"{app}-store-changelog"]}]}


def all_tasks(partitions: int = PARTITIONS) -> set[Task]:
    return {(s, p) for s in ("0", "1") for p in range(partitions)}


STATEFUL = {"1"}


# ------------------------------------------------------------------------------ instances
class Instance:
    """One ``streams_member`` process and what it printed."""

    def __init__(self, app: App, name: str, process_id: str, endpoint: str | None,
                 topology: Mapping[str, Any], extra: Sequence[str] = ()) -> None:
        self.app = app
        self.name = name
        self.member_id = f"{app.group}-{name}"
        self.process_id = process_id
        self.endpoint = endpoint
        self.held = "--hold" in extra
        """Started with ``--hold`` and not told to join yet."""
        args = [sys.executable, "-m", "tests.integration.streams_member",
                "--bootstrap", app.bootstrap, "--group", app.group,
                "--topology", json.dumps(topology), "--member-id", self.member_id,
                "--process-id", process_id, *extra]
        if endpoint:
            args += ["--endpoint", endpoint]
        self.proc = subprocess.Popen(args, cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.rows: list[dict[str, Any]] = []
        self.owned: dict[str, set[Task]] = {role: set() for role in ROLES}
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            row = json.loads(line)
            with self.app.lock:
                self.rows.append(row)
                self.app.events.append((row["t"], self.name, row))
                self.owned = {role: {(s, p) for s, p in row[role]} for role in ROLES}

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    # --- what it said ------------------------------------------------------------------------
    def heartbeats(self) -> list[dict[str, Any]]:
        with self.app.lock:
            return [r for r in self.rows if r["event"] == "heartbeat"]

    def last(self, event: str = "heartbeat") -> dict[str, Any] | None:
        with self.app.lock:
            return next((r for r in reversed(self.rows) if r["event"] == event), None)

    def statuses(self) -> list[tuple[int, str]]:
        """Every status it was given, in order, repeated as often as it came."""
        return [(c, d) for r in self.heartbeats() for c, d in r["statuses"]]

    def codes(self) -> set[int]:
        return {c for c, _ in self.statuses()}

    def tasks(self, role: str = "active") -> set[Task]:
        with self.app.lock:
            return set(self.owned[role])

    # --- control -----------------------------------------------------------------------------
    def command(self, line: str) -> None:
        if line == "join":
            self.held = False
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        """Close its stdin: it revokes everything and leaves with epoch -1."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(20)

    def kill(self) -> float:
        os.kill(self.proc.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        self.proc.wait(10)
        with self.app.lock:
            self.app.events.append((killed_at, self.name, {"event": "killed"}))
            self.app.killed.add(self.name)
        return killed_at

    def pause(self) -> float:
        """SIGSTOP: from now on it is a zombie; what it thinks it owns does not count (the
        replay drops it, as for a kill) until it learns it lost everything."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        paused_at = time.monotonic()
        with self.app.lock:
            self.app.events.append((paused_at, self.name, {"event": "paused"}))
        return paused_at

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)


class App:
    """A streams application: its instances, and every line they printed."""

    def __init__(self, bootstrap: str, group: str, topology: Mapping[str, Any] | None = None
                 ) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.topology = topology or app_topology(group)
        self.lock = threading.Lock()
        self.events: list[tuple[float, str, dict[str, Any]]] = []
        self.instances: dict[str, Instance] = {}
        self.killed: set[str] = set()

    def add(self, name: str, process_id: str | None = None, endpoint: str | None = None,
            topology: Mapping[str, Any] | None = None, extra: Sequence[str] = ()) -> Instance:
        instance = Instance(self, name, process_id or f"{self.group}-process-{name}", endpoint,
                            topology or self.topology, extra)
        self.instances[name] = instance
        return instance

    def live(self) -> list[Instance]:
        """The instances running and in the group (or joining)."""
        return [i for i in self.instances.values() if i.proc.poll() is None and not i.held]

    def close(self) -> None:
        for instance in self.instances.values():
            try:
                instance.stop()
            except (subprocess.TimeoutExpired, OSError):
                instance.proc.kill()

    def check(self, replay: bool = True) -> None:
        """Every instance that ended did so cleanly, none found a frame or a response that
        breaks Kafka's schema, and the replayed ownership never doubled."""
        for instance in self.instances.values():
            bad = [r for r in instance.rows if r["event"] in ("violation", "fatal")]
            assert not bad, f"{instance.name}: {bad}\n{''.join(instance.stderr)}"
            check_responses(instance)
            code = instance.proc.poll()
            assert code in (None, 0) or instance.name in self.killed, (
                f"{instance.name} exited with {code}:\n{''.join(instance.stderr)}")
        if replay:
            check_never_doubled(self)


STATUS_RANK = {STALE_TOPOLOGY: 0, ASSIGNMENT_DELAYED: 1, MISSING_SOURCE_TOPICS: 2,
               INCORRECTLY_PARTITIONED_TOPICS: 2, MISSING_INTERNAL_TOPICS: 2,
               SHUTDOWN_APPLICATION: 3}


def check_status_order(codes: list[int]) -> None:
    """Kafka's order in one response: STALE_TOPOLOGY, ASSIGNMENT_DELAYED, at most one topic
    status, SHUTDOWN_APPLICATION."""
    ranks = [STATUS_RANK[c] for c in codes]
    assert ranks == sorted(set(ranks)), f"statuses {codes} out of Kafka's order"


def check_responses(instance: Instance) -> None:
    """Per response, as Kafka 4.3 answers: statuses in Kafka's order; the task lists on the
    answer to a join; PartitionsByUserEndpoint exactly when the endpoint information epoch is
    not the one the member sent (the last it was given)."""
    with instance.app.lock:
        rows = list(instance.rows)
    joining, sent_epoch = True, -1
    for row in rows:
        if row["event"] == "lost":
            joining = True
        if row["event"] != "heartbeat":
            continue
        check_status_order([c for c, _ in row["statuses"]])
        if joining:
            assert row["assignment"] is not None, f"{instance.name}: a join without tasks: {row}"
            joining = False
        assert (row["endpoints"] is not None) == (row["endpoint_epoch"] != sent_epoch), (
            f"{instance.name}: endpoints {row['endpoints']} at epoch {row['endpoint_epoch']}, "
            f"sent {sent_epoch}")
        sent_epoch = row["endpoint_epoch"]


def check_never_doubled(app: App) -> None:
    """Replay every member's own view in time order: at no instant is a task active on two
    members, and no process (members sharing a process id) holds a task twice (a standby
    never sits with its active task, two standbys of a task never share a process)."""
    with app.lock:
        events = sorted(app.events, key=lambda e: e[0])
    process = {name: i.process_id for name, i in app.instances.items()}
    owned: dict[str, dict[str, set[Task]]] = {}
    zombies: set[str] = set()
    for t, name, row in events:
        if row["event"] in ("killed", "paused"):
            owned.pop(name, None)
            if row["event"] == "paused":
                zombies.add(name)
            continue
        if name in zombies:  # what it says until it learns it was fenced is moot
            if row["event"] != "lost":
                continue
            zombies.discard(name)
        if "active" not in row:
            continue
        owned[name] = {role: {(s, p) for s, p in row[role]} for role in ROLES}
        active = Counter(task for view in owned.values() for task in view["active"])
        doubled = [task for task, n in active.items() if n > 1]
        assert not doubled, f"at {t:.3f} ({name} {row['event']}) active twice: {doubled}"
        for pid in set(process.values()):
            held = Counter(task for member, view in owned.items() if process[member] == pid
                           for role in ROLES for task in view[role])
            twice = [task for task, n in held.items() if n > 1]
            assert not twice, f"at {t:.3f} ({name} {row['event']}) process {pid} holds {twice}"


def settled(app: App, members: int, standbys: int, tasks: set[Task] | None = None,
            statuses: Mapping[str, set[int]] | None = None) -> bool:
    """``members`` live instances, every task active on exactly one, each stateful task with
    ``standbys`` standbys (capped by the other processes there are) on other processes than
    its active task, nothing else, each instance's last heartbeat without statuses (but those
    ``statuses`` gives it by name), and the group Stable on the server."""
    live = app.live()
    if len(live) != members:
        return False
    tasks = all_tasks() if tasks is None else tasks
    active = [t for i in live for t in i.tasks("active")]
    if sorted(active) != sorted(tasks):
        return False
    processes = {i.process_id for i in live}
    owner = {t: i.process_id for i in live for t in i.tasks("active")}
    for task in tasks:
        holders = [i.process_id for i in live if task in i.tasks("standby")]
        want = min(standbys, len(processes) - 1) if task[0] in STATEFUL else 0
        if len(holders) != want or owner[task] in holders:
            return False
    if any(i.tasks("warmup") for i in live):
        return False
    for i in live:
        last = i.last()
        allowed = (statuses or {}).get(i.name, set())
        if last is None or {c for c, _ in last["statuses"]} - allowed:
            return False
    group = describe(app.bootstrap, [app.group]).groups[0]
    return bool(group.group_state == "Stable" and len(group.members) == members)


def wait_settled(app: App, members: int, standbys: int, timeout: float = 30, **kwargs: Any
                 ) -> None:
    """``settled``, or fail with what each instance and the server say."""
    try:
        wait_until(lambda: settled(app, members, standbys, **kwargs), timeout, interval=0.05,
                   message=f"{app.group}: {members} instances settled")
    except AssertionError as exc:
        lines = [str(exc)]
        for i in app.instances.values():
            lines.append(f"{i.name} (exit {i.proc.poll()}, held {i.held}): "
                         + json.dumps(i.rows[-3:]) + "".join(i.stderr[-5:]))
        lines.append(repr(describe(app.bootstrap, [app.group]).groups[0]))
        raise AssertionError("\n".join(lines)) from None


# ------------------------------------------------------------------------------ helpers
@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path / "data", OVERRIDES) as process:
        yield process


@pytest.fixture
def apps() -> Iterator[list[App]]:
    made: list[App] = []
    try:
        yield made
    finally:
        for app in made:
            app.close()


def admin_for(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = admin_for(bootstrap)  # kept until the futures are done
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(10)


def topic_partitions(bootstrap: str) -> dict[str, int]:
    metadata = admin_for(bootstrap).list_topics(timeout=10)
    return {name: len(t.partitions) for name, t in metadata.topics.items() if not t.error}


def set_group_config(bootstrap: str, group: str, name: str, value: str) -> None:
    """IncrementalAlterConfigs (SET) on the GROUP resource, once the group's coordinator
    partition answers."""
    admin = admin_for(bootstrap)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])

    def attempt() -> bool:
        try:
            admin.incremental_alter_configs([resource])[resource].result(10)
        except Exception as exc:  # loading: retried until the deadline
            if "LOAD_IN_PROGRESS" not in str(exc) and "NOT_AVAILABLE" not in str(exc):
                raise
            return False
        return True

    wait_until(attempt, 20, interval=0.1, message=f"{name} set on group {group}")


def dump(log_dir: Path) -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, "-m", "coordinator", "log", "dump", "--log-dirs",
                          str(log_dir)], cwd=ROOT, capture_output=True, text=True, check=True,
                         timeout=60)
    return [json.loads(line) for line in out.stdout.splitlines()]


def first_time(instance: Instance, predicate: Callable[[dict[str, Any]], bool]) -> float | None:
    with instance.app.lock:
        return next((r["t"] for r in instance.rows if predicate(r)), None)


# ------------------------------------------------------------------------------ 1. scaling
@pytest.mark.slow
def test_scales_1_3_2_with_standbys_and_exclusive_tasks(server: ServerProcess,
                                                         apps: list[App]) -> None:
    bootstrap = server.bootstrap
    create_topic(bootstrap, "input", PARTITIONS)
    set_group_config(bootstrap, "scaling", "streams.num.standby.replicas", "1")
    app = App(bootstrap, "scaling")
    apps.append(app)
    # closing its tasks takes a while: the others must wait for it to report them revoked
    first = app.add("a", extra=["--revoke-delay-ms", "1000"])

    # MISSING_INTERNAL_TOPICS in the join response (nothing created yet), then gone
    wait_until(lambda: first.heartbeats(), 20, message="the first heartbeat response")
    joined = first.heartbeats()[0]
    missing = [d for c, d in joined["statuses"] if c == MISSING_INTERNAL_TOPICS]
    assert missing and missing[0].startswith("Internal topics are missing: "), joined
    assert {"scaling-repartition", "scaling-store-changelog"} == set(
        missing[0].removeprefix("Internal topics are missing: ").split(", "))
    # no tasks while they are missing (the group is not ready)
    assert joined["assignment"] == {"active": [], "standby": [], "warmup": []}

    # created by the server with the decided partition counts: the repartition topic gets its
    # writer's input count, the changelog its subtopology's task count
    wait_until(lambda: {"scaling-repartition", "scaling-store-changelog"}
               <= set(topic_partitions(bootstrap)), 10, message="the internal topics")
    counts = topic_partitions(bootstrap)
    assert counts["scaling-repartition"] == PARTITIONS
    assert counts["scaling-store-changelog"] == PARTITIONS

    wait_settled(app, 1, 1, 20)
    assert first.tasks("standby") == set()  # a single process: no standby possible
    app.add("b")
    app.add("c")
    wait_settled(app, 3, 1, 30)
    counts3 = sorted(len(i.tasks()) for i in app.live())
    assert counts3 == [2, 3, 3], counts3
    app.check()
    # revocation before assignment: a gave up tasks a second after it was told to, and
    # only then did b and c get them
    revoking = first.last("revoking")
    revoked = first.last("revoke")
    assert revoking is not None and revoked is not None
    assert revoked["t"] - revoking["t"] >= 1.0
    given_up = {(s, p) for s, p in revoked["tasks"]["active"]}
    assert given_up and not given_up & first.tasks()
    taken = [r for i in (app.instances["b"], app.instances["c"]) for r in i.rows
             if r["event"] == "assign" and {(s, p) for s, p in r["tasks"]["active"]} & given_up]
    assert taken and min(r["t"] for r in taken) > revoked["t"]

    first.stop()
    assert first.last("left") is not None
    wait_settled(app, 2, 1, 30)
    assert sorted(len(i.tasks()) for i in app.live()) == [4, 4]
    # with two processes, each stateful task's standby is on the other one
    stateful = {t for t in all_tasks() if t[0] in STATEFUL}
    for instance in app.live():
        assert instance.tasks("standby") == stateful - instance.tasks("active")
    app.check()
    # the epoch the members report is the group's
    group = describe(bootstrap, ["scaling"]).groups[0]
    assert {(i.last() or {}).get("epoch") for i in app.live()} == {group.assignment_epoch}


# ------------------------------------------------------------------------------ 2. kill -9
@pytest.mark.slow
def test_killed_instance_loses_its_tasks_after_the_session_timeout(
        tmp_path: Path, apps: list[App]) -> None:
    session_ms = 3000
    overrides = {**OVERRIDES, "group.streams.session.timeout.ms": str(session_ms),
                 "group.streams.num.standby.replicas": "1"}
    with ServerProcess(tmp_path / "data", overrides) as server:
        create_topic(server.bootstrap, "input", PARTITIONS)
        app = App(server.bootstrap, "killing")
        apps.append(app)
        for name in ("a", "b", "c"):
            app.add(name)
        wait_settled(app, 3, 1, 30)
        victim = app.instances["b"]
        lost = victim.tasks("active")
        assert lost
        killed_at = victim.kill()
        # restarted at once with its process id (Kafka Streams keeps it in its state
        # directory) and a new member id: its old member still holds the tasks until fenced
        restarted = app.add("b2", process_id=victim.process_id)
        survivors = [app.instances["a"], app.instances["c"], restarted]

        def moved() -> bool:
            return lost <= set().union(*(s.tasks("active") for s in survivors))

        wait_until(moved, session_ms / 1000 + 10, interval=0.01,
                   message="the victim's tasks to move")
        all_moved = time.monotonic() - killed_at
        first = min(t for s in survivors if (t := first_time(s, lambda r: r["event"] == "assign"
                    and r["t"] > killed_at and bool({(a, b) for a, b in r["tasks"]["active"]}
                                                    & lost))) is not None)
        took = first - killed_at
        print(f"victim's first task moved {took:.2f}s after SIGKILL, all {all_moved:.2f}s "
              f"(session timeout {session_ms / 1000}s, heartbeat {HEARTBEAT_MS / 1000}s)")
        # the session was last renewed at most one heartbeat interval before the kill
        assert took >= (session_ms - HEARTBEAT_MS) / 1000 - 0.05, took
        assert all_moved <= (session_ms + 4 * HEARTBEAT_MS) / 1000 + 2.0, all_moved
        server.wait_event("streams group member session expired", member_id=victim.member_id)
        wait_settled(app, 3, 1, 20)
        app.check()

        # paused past its session: fenced meanwhile, it learns so on its next heartbeat
        # (UNKNOWN_MEMBER_ID), drops every task and rejoins with epoch 0 and the same id
        zombie, others = app.instances["c"], [app.instances["a"], restarted]
        held = zombie.tasks("active")
        paused_at = zombie.pause()
        try:
            wait_until(lambda: held <= set().union(*(o.tasks("active") for o in others)),
                       session_ms / 1000 + 10,
                       interval=0.01, message="the paused instance's tasks to move")
            took_paused = time.monotonic() - paused_at
        finally:
            zombie.resume()
        lost = wait_until(lambda: zombie.last("lost"), 10, message="the zombie to learn")
        assert lost["error"] == 25 and lost["epoch"] == 0  # UNKNOWN_MEMBER_ID
        assert {(s, p) for s, p in lost["tasks"]} >= held
        # its first heartbeat after the pause was refused (besides the answer that may have
        # been on its way when it was stopped)
        between = [r for r in zombie.heartbeats() if paused_at < r["t"] < lost["t"]]
        assert len(between) <= 1, between
        wait_settled(app, 3, 1, 20)
        rejoined = [r for r in zombie.heartbeats() if r["t"] > lost["t"]]
        assert rejoined[0]["assignment"] is not None  # a join is answered with task lists
        members = {m.member_id for m in describe(server.bootstrap, ["killing"]).groups[0].members}
        assert members == {i.member_id for i in (*others, zombie)}
        print(f"paused instance's tasks moved after {took_paused:.2f}s")
        assert took_paused >= (session_ms - HEARTBEAT_MS) / 1000 - 0.05, took_paused
        app.check()


@pytest.mark.slow
def test_member_not_revoking_within_its_rebalance_timeout_is_fenced(
        server: ServerProcess, apps: list[App]) -> None:
    create_topic(server.bootstrap, "input", PARTITIONS)
    app = App(server.bootstrap, "slow-revoker")
    apps.append(app)
    slow = app.add("slow", extra=["--rebalance-timeout-ms", "1000", "--revoke-delay-ms", "4000"])
    wait_settled(app, 1, 0, 20)
    fast = app.add("fast")
    revoking = wait_until(lambda: slow.last("revoking"), 10, message="a revocation")
    to_revoke = {(s, p) for s, p in revoking["tasks"]["active"]}
    wait_until(lambda: to_revoke <= fast.tasks(), 20, message="the other member to take them")
    taken = first_time(fast, lambda r: r["event"] == "assign"
                       and bool({(s, p) for s, p in r["tasks"]["active"]} & to_revoke))
    assert taken is not None
    # fenced after its rebalance timeout (1 s), while it still thought it owned the tasks
    assert taken - revoking["t"] >= 1.0 - 0.05, taken - revoking["t"]
    revoked = slow.last("revoke")
    assert revoked is None or revoked["t"] > taken
    server.wait_event("streams group member did not revoke its tasks within its rebalance "
                      "timeout", member_id=slow.member_id)
    # its next heartbeat (still owning them) learns it is gone: it drops them and rejoins
    lost = wait_until(lambda: slow.last("lost"), 10, message="the fenced member to learn")
    assert lost["error"] == 25  # UNKNOWN_MEMBER_ID
    assert {(s, p) for s, p in lost["tasks"]} == all_tasks()  # it never got to revoke
    assert lost["t"] - taken < 1.0  # a heartbeat interval, not the end of its revocation
    wait_settled(app, 2, 0, 20)
    app.check(replay=False)  # the slow member was a zombie for a while


# ------------------------------------------------------------------------------ 3. statuses
@pytest.mark.slow
def test_stale_topology_missing_source_topics_and_shutdown_application(
        server: ServerProcess, apps: list[App]) -> None:
    bootstrap = server.bootstrap
    create_topic(bootstrap, "input", PARTITIONS)

    # STALE_TOPOLOGY: the group's topology epoch is the first member's (1)
    stale = App(bootstrap, "stale", app_topology("stale", epoch=1))
    apps.append(stale)
    current = stale.add("current")
    wait_until(lambda: current.last(), 20, message="the first member's join")
    behind = stale.add("behind", topology=app_topology("stale", epoch=0))
    # MISSING_SOURCE_TOPICS: its source topic does not exist yet
    missing = App(bootstrap, "missing", app_topology("missing", source="late-input"))
    apps.append(missing)
    lonely = missing.add("a")
    # SHUTDOWN_APPLICATION: asked by one member, seen by all, who then shut down (leave)
    shutdown = App(bootstrap, "shutdown")
    apps.append(shutdown)
    asking = shutdown.add("asking", extra=["--leave-on-shutdown"])
    other = shutdown.add("other", extra=["--leave-on-shutdown"])

    wait_settled(stale, 2, 0, 30, statuses={"behind": {STALE_TOPOLOGY}})
    assert (STALE_TOPOLOGY, "The member's topology epoch 0 is behind the group's topology "
                            "epoch 1.") in behind.statuses()
    assert STALE_TOPOLOGY not in current.codes()
    assert describe(bootstrap, ["stale"]).groups[0].topology.epoch == 1
    stale.check()

    wait_until(lambda: len(lonely.heartbeats()) >= 3, 10, message="heartbeats")
    # on every heartbeat (besides, on the join, the empty target's run in the background)
    for row in lonely.heartbeats():
        assert (MISSING_SOURCE_TOPICS, "Source topics late-input are missing.") in [
            tuple(s) for s in row["statuses"]], row
    assert lonely.codes() <= {MISSING_SOURCE_TOPICS, ASSIGNMENT_DELAYED}
    assert lonely.tasks() == set()
    not_ready = describe(bootstrap, ["missing"]).groups[0]
    assert not_ready.group_state == "NotReady"
    # not configured: the topology as stored, the internal topics' partition counts unset
    assert [(s.subtopology_id, s.source_topics) for s in not_ready.topology.subtopologies] == [
        ("0", ("late-input",)), ("1", ())]
    internal = not_ready.topology.subtopologies[1]
    assert [(t.name, t.partitions) for t in (*internal.repartition_source_topics,
                                             *internal.state_changelog_topics)] == [
        ("missing-repartition", 0), ("missing-store-changelog", 0)]
    assert "missing-repartition" not in topic_partitions(bootstrap)  # nothing created
    create_topic(bootstrap, "late-input", 2)
    wait_settled(missing, 1, 0, 20, tasks=all_tasks(2))
    missing.check()

    wait_settled(shutdown, 2, 0, 20)
    asking.command("shutdown")
    detail = (f"Streams group member {asking.member_id} encountered a fatal error and "
              "requested a shutdown for the entire application.")
    for instance in (asking, other):
        wait_until(instance_left(instance), 10, message=f"{instance.name} to leave")
        assert (SHUTDOWN_APPLICATION, detail) in instance.statuses()
        assert instance.proc.wait(10) == 0
    assert describe(bootstrap, ["shutdown"]).groups[0].group_state == "Empty"
    # the request is forgotten once the group is empty
    later = shutdown.add("later")
    wait_settled(shutdown, 1, 0, 20)
    assert SHUTDOWN_APPLICATION not in later.codes()
    shutdown.check()


def instance_left(instance: Instance) -> Callable[[], dict[str, Any] | None]:
    return lambda: instance.last("left")


# ------------------------------------------------------------------------------ 4. describe
def endpoint_view(instances: Iterable[Instance], app: str) -> dict[tuple[str, int], Any]:
    """What PartitionsByUserEndpoint must say for these members: per endpoint, the source and
    repartition-source partitions of its active and standby tasks (changelogs not listed)."""
    inputs = {"0": ["input"], "1": [f"{app}-repartition"]}
    out: dict[tuple[str, int], Any] = {}
    for i in instances:
        assert i.endpoint is not None
        host, port = i.endpoint.rsplit(":", 1)
        entry = out.setdefault((host, int(port)), {"active": set(), "standby": set()})
        for role in ("active", "standby"):
            entry[role] |= {(topic, p) for s, p in i.tasks(role) for topic in inputs[s]}
    return out


def received_view(instance: Instance) -> dict[tuple[str, int], Any] | None:
    with instance.app.lock:
        row = next((r for r in reversed(instance.rows)
                    if r["event"] == "heartbeat" and r["endpoints"] is not None), None)
    if row is None:
        return None
    out: dict[tuple[str, int], Any] = {}
    for e in row["endpoints"]:  # several members may share an endpoint: clients union them
        entry = out.setdefault((e["host"], e["port"]), {"active": set(), "standby": set()})
        for role in ("active", "standby"):
            entry[role] |= {(topic, p) for topic, parts in e[role] for p in parts}
    return out


def describe_tasks(assignment: Any, role: str) -> set[Task]:
    return {(t.subtopology_id, p) for t in getattr(assignment, f"{role}_tasks")
            for p in t.partitions}


@pytest.mark.slow
def test_describe_and_endpoints_with_two_members_in_one_process(
        server: ServerProcess, apps: list[App]) -> None:
    bootstrap = server.bootstrap
    create_topic(bootstrap, "input", PARTITIONS)
    set_group_config(bootstrap, "iq", "streams.num.standby.replicas", "1")
    app = App(bootstrap, "iq")
    apps.append(app)
    # two stream threads of one instance (one process id, one endpoint), and another instance
    app.add("a1", process_id="process-a", endpoint="localhost:7001")
    app.add("a2", process_id="process-a", endpoint="localhost:7001")
    app.add("b", process_id="process-b", endpoint="localhost:7002")
    wait_settled(app, 3, 1, 30)
    app.check()

    # every member's latest PartitionsByUserEndpoint is the group's current one
    expected = endpoint_view(app.live(), "iq")
    assert expected[("localhost", 7001)]["active"] and expected[("localhost", 7002)]["active"]
    wait_until(lambda: all(received_view(i) == expected for i in app.live()), 10,
               message="every member told the endpoints of the current assignment")

    found = describe(bootstrap, ["iq", "absent"]).groups
    group, absent = found
    assert (absent.error_code, absent.error_message) == (69, "Group absent not found.")
    assert group.error_code == 0 and group.group_id == "iq"
    assert group.group_state == "Stable" and group.group_epoch == group.assignment_epoch
    topology = group.topology
    assert topology.epoch == 0
    assert [s.subtopology_id for s in topology.subtopologies] == ["0", "1"]
    sub0, sub1 = topology.subtopologies
    assert (sub0.source_topics, sub0.repartition_sink_topics) == (("input",), ("iq-repartition",))
    assert (sub0.state_changelog_topics, sub0.repartition_source_topics) == ((), ())
    assert (sub1.source_topics, sub1.repartition_sink_topics) == ((), ())
    # the decided partition counts, the replication factor as sent (-1: broker default)
    assert [(t.name, t.partitions, t.replication_factor)
            for t in sub1.repartition_source_topics] == [("iq-repartition", PARTITIONS, -1)]
    assert [(t.name, t.partitions, t.replication_factor)
            for t in sub1.state_changelog_topics] == [("iq-store-changelog", PARTITIONS, -1)]

    by_id = {m.member_id: m for m in group.members}
    assert set(by_id) == {i.member_id for i in app.live()}
    for instance in app.live():
        member = by_id[instance.member_id]
        assert member.process_id == instance.process_id
        assert f"{member.user_endpoint.host}:{member.user_endpoint.port}" == instance.endpoint
        assert (member.client_id, member.topology_epoch, member.is_classic) == (
            "streams-member", 0, False)
        assert member.member_epoch == group.assignment_epoch
        for role in ROLES:
            assert describe_tasks(member.assignment, role) == instance.tasks(role), role
            assert describe_tasks(member.target_assignment, role) == instance.tasks(role), role
    # the standby of a task is never on its active task's process (here: process-a has two
    # members, so it holds each of its tasks only once across them)
    process_of = {m.member_id: m.process_id for m in group.members}
    for task in all_tasks():
        active = [process_of[m.member_id] for m in group.members
                  if task in describe_tasks(m.assignment, "active")]
        standby = [process_of[m.member_id] for m in group.members
                   if task in describe_tasks(m.assignment, "standby")]
        assert len(active) == 1 and active[0] not in standby, (task, active, standby)


# ------------------------------------------------------------------------------ 5. seed 000
@pytest.mark.slow
def test_initial_delay_and_interval_space_offloaded_targets(tmp_path: Path,
                                                            apps: list[App]) -> None:
    """Three instances join together, a fourth and a fifth once those settled. What each join
    had to wait for, and which target it is in, follows from the log alone (the server's join
    and target times), not from when the test made things happen: a join before the target was
    due (the initial delay after the first join, then the interval after the previous target)
    is told why it waits and is in the next target; a join once it was due found the run in
    flight or started it (it is in that target or the next)."""
    delay_ms, interval_ms = 1000, 1500
    port = free_port()
    overrides = {**OVERRIDES, "group.streams.initial.rebalance.delay.ms": str(delay_ms),
                 "group.streams.assignment.interval.ms": str(interval_ms),
                 "group.streams.assignor.offload.enable": "true",
                 "metrics.listener": f"http://127.0.0.1:{port}"}
    group_id = "batched"
    with ServerProcess(tmp_path / "data", overrides) as server:
        bootstrap = server.bootstrap
        create_topic(bootstrap, "input", PARTITIONS)
        before = scrape(f"http://127.0.0.1:{port}/metrics")
        app = App(bootstrap, group_id)
        apps.append(app)
        # started held, told to join once all run: the process starts (a second or more on a
        # busy machine) do not space the first three joins
        early = [app.add(name, extra=["--hold"]) for name in "abc"]
        later = [app.add(name, extra=["--hold"]) for name in "de"]
        wait_until(lambda: all(i.last("started") for i in app.instances.values()), 30,
                   message="the instances to start")
        for instance in early:
            instance.command("join")
        wait_settled(app, 3, 0, 30)
        # a new target computed in the background: a fourth and a fifth instance join after
        # it (within the interval, unless settling took longer)
        for instance in later:
            instance.command("join")
        wait_settled(app, 5, 0, 30)
        app.check()
        app.close()
        # a run may still end after the group settled (on a slow machine): the metrics once
        # every run the log says was installed is counted (the log line comes after the count)
        metrics = f"http://127.0.0.1:{port}/metrics"

        def counted() -> bool:
            installed = [e for e in server.events_of("installed offloaded target assignment")
                         if e.get("group_id") == group_id]
            return total(scrape(metrics), "assignor_run_time_ms_count", group=group_id,
                         assignor="sticky") == len(installed)

        wait_until(counted, 10, message="the runs counted in the metrics")
        after = scrape(metrics)
        server.stop()  # and its log read to the end: the last target's line may be on its way
        events = [e for e in server.events_of() if e.get("group_id") == group_id]
    rows = [r for r in dump(tmp_path / "data") if r["key"].get("GroupId") == group_id]

    joins = [r for r in rows if r["type"] == "StreamsGroupMemberMetadata" and r["value"]]
    targets = [r for r in rows
               if r["type"] == "StreamsGroupTargetAssignmentMetadata" and r["value"]]
    stamps = [r["value"]["Timestamp"] for r in targets]
    epochs = [r["value"]["AssignmentEpoch"] for r in targets]
    joined: dict[str, dict[str, Any]] = {}
    for r in joins:
        joined.setdefault(r["key"]["MemberId"], r)
    # the target that first had each member: a member without a target gets a
    # StreamsGroupTargetAssignmentMember record in the batch of the next target's metadata
    target_offsets = [r["offset"] for r in targets]
    first_target: dict[str, int] = {}
    for r in rows:
        if r["type"] == "StreamsGroupTargetAssignmentMember" and r["value"]:
            first_target.setdefault(r["key"]["MemberId"], bisect.bisect(target_offsets,
                                                                        r["offset"]))
    # when target k was due: the initial delay after the first join, then the interval after
    # the previous target (the time the server wrote with it)
    origin = joins[0]["timestamp"]
    due = [origin + delay_ms, *(stamp + interval_ms for stamp in stamps)]
    print(f"{len(joins)} joins, targets at epochs {epochs}, +{[s - origin for s in stamps]} ms "
          f"after the first join, gaps {[b - a for a, b in itertools.pairwise(stamps)]} ms; "
          + ", ".join(f"{m} +{r['timestamp'] - origin} ms -> target {first_target.get(m)}"
                      for m, r in joined.items()))
    assert set(joined) == {f"{group_id}-{n}" for n in "abcde"}
    assert set(first_target) == set(joined)
    assert stamps[0] >= origin + delay_ms, (stamps, origin)
    assert all(b - a >= interval_ms for a, b in itertools.pairwise(stamps)), stamps
    assert epochs == sorted(set(epochs))
    assert len(targets) >= 2, epochs  # d and e joined once a target had settled a, b and c

    # each join against the log: the targets written before it, and whether the next one was
    # due then. Every join that came before the next target was due is in that target (the
    # joins batched), and its answer said why it waits (the initial delay, or the interval); a
    # join once it was due found the run in flight or started it (its answer says a run is in
    # flight either way) and is in that run's target or the next.
    waited: dict[int, set[str]] = {}
    for member, join in joined.items():
        written = bisect.bisect(target_offsets, join["offset"])
        answer = app.instances[member.removeprefix(f"{group_id}-")].heartbeats()[0]
        delayed = [d for c, d in answer["statuses"] if c == ASSIGNMENT_DELAYED]
        if join["timestamp"] < due[written]:
            waited.setdefault(written, set()).add(member)
            assert first_target[member] == written, (member, join, first_target)
            assert delayed == [INITIAL_DELAY_DETAIL if written == 0 else INTERVAL_DETAIL], (
                member, join, answer)
        else:
            assert first_target[member] in (written, written + 1), (member, join, first_target)
            assert delayed == [IN_FLIGHT_DETAIL], (member, join, answer)
    print(f"joined before their target was due (batched): {waited}")
    # the runs after the first were started by heartbeats, answered that a run is in flight
    details = Counter(d for i in app.instances.values() for c, d in i.statuses()
                      if c == ASSIGNMENT_DELAYED)
    assert details[IN_FLIGHT_DETAIL], details
    # no task before the initial delay (from the join that made the group) ended: the join
    # reached the server after it was sent (its answer may come much later on a busy machine)
    joined_at = min(i.heartbeats()[0]["sent_at"] for i in app.instances.values())
    assigned_at = min(t for i in app.instances.values()
                      if (t := first_time(i, lambda r: r["event"] == "assign")) is not None)
    assert assigned_at - joined_at >= delay_ms / 1000 - 0.05

    # every target came from the background executor
    installed = [e["assignment_epoch"] for e in events
                 if e["event"] == "installed offloaded target assignment"]
    assert installed == epochs
    assert not [e for e in events if e["event"] == "computed target assignment"]
    runs = total(after, "assignor_run_time_ms_count", group=group_id, assignor="sticky")
    assert total(before, "assignor_run_time_ms_count", group=group_id) == 0
    assert runs == len(targets)
    processed = (total(after, "background_processing_time_ms_count")
                 - total(before, "background_processing_time_ms_count"))
    assert processed >= len(targets), processed


# ------------------------------------------------------------------------------ bad requests
def heartbeat_request(**fields: Any) -> Any:
    """A join of member ``m`` to group ``g`` (a valid one), with ``fields`` changed."""
    request: dict[str, Any] = dict(
        group_id="g", member_id="m", member_epoch=0, endpoint_information_epoch=-1,
        instance_id=None, rack_id=None, rebalance_timeout=datetime.timedelta(seconds=30),
        topology=topology(app_topology("g")), active_tasks=(), standby_tasks=(),
        warmup_tasks=(), process_id="p", user_endpoint=None, client_tags=(),
        task_offsets=None, task_end_offsets=None, shutdown_application=False)
    request.update(fields)
    return hb_request.StreamsGroupHeartbeatRequest(**request)


STEADY = {"topology": None, "active_tasks": None, "standby_tasks": None, "warmup_tasks": None,
          "rebalance_timeout": datetime.timedelta(milliseconds=-1)}
TASK = hb_request.TaskIds(subtopology_id="0", partitions=(i32(0),))
OFFSET = hb_request.TaskOffset(subtopology_id="0", partition=i32(0), offset=i64(1))
BAD_REQUESTS: list[tuple[dict[str, Any], int, str]] = [
    # Kafka 4.3's checks before the group is touched (INVALID_REQUEST 42,
    # STREAMS_INVALID_TOPOLOGY 130), then the group's (69, 25, 110)
    ({"member_id": " "}, 42, "MemberId can't be empty."),
    ({"instance_id": "i"}, 42, "Static membership is not yet supported."),
    ({"task_offsets": (OFFSET,)}, 42, "TaskOffsets are not supported yet."),
    ({"task_end_offsets": (OFFSET,)}, 42, "TaskEndOffsets are not supported yet."),
    ({"warmup_tasks": (TASK,)}, 42, "WarmupTasks are not supported yet."),
    ({"active_tasks": (TASK,)}, 42, "ActiveTasks must be empty when (re-)joining."),
    ({"rebalance_timeout": datetime.timedelta(milliseconds=-1)}, 42,
     "RebalanceTimeoutMs must be provided in first request."),
    ({"topology": None}, 42, "Topology must be non-null when (re-)joining."),
    ({"member_epoch": -3, **STEADY}, 42, "MemberEpoch is -3, but must be greater than or "
                                         "equal to -2."),
    ({"member_epoch": 3, **STEADY, "active_tasks": ()}, 42,
     "If one task-type is non-null, all must be non-null."),
    ({"member_epoch": 3, "active_tasks": None, "standby_tasks": None, "warmup_tasks": None},
     42, "Topology can only be provided when (re-)joining."),
    ({"topology": topology({"subtopologies": [{"id": "0", "source": ["__consumer_offsets"]}]})},
     130, "Use of Kafka internal topics __consumer_offsets in a Kafka Streams topology is "
          "prohibited."),
    ({"topology": topology({"subtopologies": [
        {"id": "0", "source": ["input"], "changelog": [{"name": "g-c", "partitions": 2}]}]})},
     130, "Changelog topic g-c must have an undefined partition count, but it is set to 2."),
    ({"member_epoch": 3, **STEADY}, 69, "Streams group g not found."),
]


@pytest.mark.slow
def test_bad_heartbeats_get_kafkas_errors(server: ServerProcess) -> None:
    """Through the checked connection (kio both ways): each refused request gets Kafka 4.3's
    error code and message, and the connection keeps serving."""
    create_topic(server.bootstrap, "input", PARTITIONS)
    with KioConnection(server.bootstrap, "bad-requests") as conn:
        wait_until(lambda: conn.request(heartbeat_request(member_epoch=-1, **STEADY)).error_code
                   != 14, 20, message="the coordinator partition to load")
        for fields, code, message in BAD_REQUESTS:
            response = conn.request(heartbeat_request(**fields))
            assert (int(response.error_code), response.error_message) == (code, message), fields
            assert (response.member_id, response.member_epoch) == ("", 0)
            assert response.active_tasks is response.partitions_by_user_endpoint is None
        joined = conn.request(heartbeat_request())
        assert joined.error_code == 0 and joined.member_epoch > 0
        epoch = joined.member_epoch
        for fields, code, message in [
                ({"member_id": "x", "member_epoch": 1, **STEADY}, 25,
                 "Member x is not a member of group g."),
                ({"member_epoch": epoch + 5, **STEADY}, 110,
                 f"The streams group member has a greater member epoch ({epoch + 5}) than the "
                 f"one known by the group coordinator ({epoch}). The member must abandon all "
                 "its partitions and rejoin."),
                ({"topology": topology(app_topology("g", source="elsewhere"))}, 42,
                 "Topology updates are not supported yet.")]:
            response = conn.request(heartbeat_request(**fields))
            assert (int(response.error_code), response.error_message) == (code, message), fields

        def ready() -> bool:  # tasks are checked once the topology is configured
            nonlocal epoch
            response = conn.request(heartbeat_request(member_epoch=epoch, **STEADY))
            assert response.error_code == 0, response
            epoch = response.member_epoch
            return not response.status

        wait_until(ready, 10, message="the topology to be ready")
        response = conn.request(heartbeat_request(
            member_epoch=epoch, **{**STEADY, "active_tasks": (
                hb_request.TaskIds(subtopology_id="7", partitions=(i32(0),)),),
                "standby_tasks": (), "warmup_tasks": ()}))
        assert (int(response.error_code), response.error_message) == (
            42, "Subtopology 7 does not exist in the topology.")
        response = conn.request(heartbeat_request(
            member_epoch=epoch, **{**STEADY, "active_tasks": (),
                                   "standby_tasks": (hb_request.TaskIds(
                                       subtopology_id="1", partitions=(i32(9),)),),
                                   "warmup_tasks": ()}))
        assert (int(response.error_code), response.error_message) == (
            42, "Task 9 for subtopology 1 is invalid. Number of tasks for this subtopology: 4")
        left = conn.request(heartbeat_request(member_epoch=-1, **STEADY))
        assert (left.error_code, left.member_epoch, left.status) == (0, -1, ())


@pytest.mark.slow
def test_heartbeat_error_responses_carry_an_empty_status_list(server: ServerProcess) -> None:
    with KioConnection(server.bootstrap, "bad-requests") as conn:
        response = conn.request(heartbeat_request(member_id=" "))
        assert response.error_code == 42
        assert response.status == ()


# ------------------------------------------------------------------------------ 6. records
# Kafka 4.3's record layouts (group-coordinator/src/main/resources/common/message/
# StreamsGroup*.json): field -> type; "?" nullable, "[]" array, {...} a struct.
KEY = {"GroupId": "string"}
MEMBER_KEY = {"GroupId": "string", "MemberId": "string"}
TASK_IDS = {"SubtopologyId": "string", "Partitions": "[]int32"}
# record 22's TaskIds: AssignmentEpochs is tagged and nullable in Kafka (null for standby and
# warm-up lists); the store has no tagged fields, so it is there always (FORMAT.md)
TASK_IDS_EPOCHS = {**TASK_IDS, "AssignmentEpochs": "[]int32?"}
KEY_VALUE = {"Key": "string", "Value": "string"}
TOPIC_INFO = {"Name": "string", "Partitions": "int32", "ReplicationFactor": "int16",
              "TopicConfigs": [{"key": "string", "value": "string"}]}
RECORDS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "StreamsGroupMetadata": (KEY, {
        "Epoch": "int32", "MetadataHash": "int64", "ValidatedTopologyEpoch": "int32",
        "LastAssignmentConfigs": [KEY_VALUE]}),
    "StreamsGroupMemberMetadata": (MEMBER_KEY, {
        "InstanceId": "string?", "RackId": "string?", "ClientId": "string",
        "ClientHost": "string", "RebalanceTimeoutMs": "int32", "TopologyEpoch": "int32",
        "ProcessId": "string", "UserEndpoint": ({"Host": "string", "Port": "uint16"}, "?"),
        "ClientTags": [KEY_VALUE]}),
    "StreamsGroupTargetAssignmentMetadata": (KEY, {
        "AssignmentEpoch": "int32", "AssignmentTimestamp": "int64"}),
    "StreamsGroupTargetAssignmentMember": (MEMBER_KEY, {
        "ActiveTasks": [TASK_IDS], "StandbyTasks": [TASK_IDS], "WarmupTasks": [TASK_IDS]}),
    "StreamsGroupCurrentMemberAssignment": (MEMBER_KEY, {
        "MemberEpoch": "int32", "PreviousMemberEpoch": "int32", "State": "int8",
        **{f"{role}{pending}": [TASK_IDS_EPOCHS] for pending in ("", "PendingRevocation")
           for role in ("ActiveTasks", "StandbyTasks", "WarmupTasks")}}),
    "StreamsGroupTopology": (KEY, {
        "Epoch": "int32", "Subtopologies": [{
            "SubtopologyId": "string", "SourceTopics": "[]string",
            "SourceTopicRegex": "[]string", "StateChangelogTopics": [TOPIC_INFO],
            "RepartitionSinkTopics": "[]string", "RepartitionSourceTopics": [TOPIC_INFO],
            "CopartitionGroups": [{"SourceTopics": "[]int16", "SourceTopicRegex": "[]int16",
                                   "RepartitionSourceTopics": "[]int16"}]}]}),
}
# the store's names that are not Kafka 4.3's (the dump is meant to use Kafka's names)
RENAMED = {
    # seed 000 calls it Timestamp (the consumer and share records' name too)
    ("StreamsGroupTargetAssignmentMetadata", "AssignmentTimestamp"): "Timestamp",
}
RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def check_value(record: str, path: str, spec: Any, value: Any) -> None:
    """``value`` (decoded JSON) has exactly the layout ``spec``."""
    if isinstance(spec, tuple):  # (struct, "?"): nullable struct
        if value is not None:
            check_value(record, path, spec[0], value)
        return
    if isinstance(spec, list):
        assert isinstance(value, list), f"{record}.{path}: {value!r} is not an array"
        for i, item in enumerate(value):
            check_value(record, f"{path}[{i}]", spec[0], item)
        return
    if isinstance(spec, dict):
        assert isinstance(value, dict), f"{record}.{path}: {value!r} is not a struct"
        names = {RENAMED.get((record, name), name) for name in spec}
        assert set(value) == names, f"{record}.{path}: fields {set(value)} != {names}"
        for name, inner in spec.items():
            check_value(record, f"{path}.{name}", inner,
                        value[RENAMED.get((record, name), name)])
        return
    kind = spec.removesuffix("?")
    if spec.endswith("?") and value is None:
        return
    if kind.startswith("[]"):
        assert isinstance(value, list), f"{record}.{path}: {value!r} is not an array"
        for item in value:
            check_value(record, path, kind[2:], item)
    elif kind == "string":
        assert isinstance(value, str), f"{record}.{path}: {value!r} is not a string"
    elif kind == "uint16":
        assert isinstance(value, int) and 0 <= value < 1 << 16, f"{record}.{path}: {value!r}"
    else:
        bits = RANGES[kind]
        assert isinstance(value, int) and not isinstance(value, bool), f"{record}.{path}"
        assert -(1 << (bits - 1)) <= value < 1 << (bits - 1), f"{record}.{path}: {value!r}"


def tasks_in(entries: Iterable[Mapping[str, Any]]) -> set[Task]:
    return {(e["SubtopologyId"], p) for e in entries for p in e["Partitions"]}


@pytest.mark.slow
def test_streams_records_match_kafkas_schemas(tmp_path: Path, apps: list[App]) -> None:
    group_id = "records"
    with ServerProcess(tmp_path / "data", OVERRIDES) as server:
        bootstrap = server.bootstrap
        create_topic(bootstrap, "input", PARTITIONS)
        set_group_config(bootstrap, group_id, "streams.num.standby.replicas", "1")
        app = App(bootstrap, group_id)
        apps.append(app)
        leaving = app.add("a", endpoint="localhost:8001",
                          extra=["--rack", "rack-1", "--tag", "zone=z1", "--tag", "az=a2",
                                 "--rebalance-timeout-ms", "45000", "--client-id", "app-a"])
        app.add("b", endpoint="localhost:8002")
        wait_settled(app, 2, 1, 30)
        leaving.stop()
        wait_settled(app, 1, 1, 30)
        described = describe(bootstrap, [group_id]).groups[0]
        app.instances["b"].kill()  # no leave: its records stay as described
        app.check()
        server.stop()
    rows = [r for r in dump(tmp_path / "data") if r["key"].get("GroupId") == group_id]
    streams = [r for r in rows if r["type"].startswith("StreamsGroup")]
    assert {r["type"] for r in streams} == set(RECORDS)  # 18 is never written
    for row in streams:
        key_spec, value_spec = RECORDS[row["type"]]
        check_value(row["type"], "key", key_spec, row["key"])
        if row["value"] is not None:
            check_value(row["type"], "value", value_spec, row["value"])

    # 19: what member a sent on its join (client tags sorted by key)
    a_id = f"{group_id}-a"
    meta = next(r["value"] for r in streams
                if r["type"] == "StreamsGroupMemberMetadata" and r["key"]["MemberId"] == a_id)
    assert meta == {"InstanceId": None, "RackId": "rack-1", "ClientId": "app-a",
                    "ClientHost": "/127.0.0.1", "RebalanceTimeoutMs": 45000,
                    "TopologyEpoch": 0, "ProcessId": f"{group_id}-process-a",
                    "UserEndpoint": {"Host": "localhost", "Port": 8001},
                    "ClientTags": [{"Key": "az", "Value": "a2"}, {"Key": "zone", "Value": "z1"}]}
    # 23: the topology as sent, once
    topologies = [r for r in streams if r["type"] == "StreamsGroupTopology"]
    assert len(topologies) == 1
    info = {"Partitions": 0, "ReplicationFactor": -1, "TopicConfigs": []}
    assert topologies[0]["value"] == {"Epoch": 0, "Subtopologies": [
        {"SubtopologyId": "0", "SourceTopics": ["input"], "SourceTopicRegex": [],
         "StateChangelogTopics": [], "RepartitionSinkTopics": [f"{group_id}-repartition"],
         "RepartitionSourceTopics": [], "CopartitionGroups": []},
        {"SubtopologyId": "1", "SourceTopics": [], "SourceTopicRegex": [],
         "StateChangelogTopics": [{"Name": f"{group_id}-store-changelog", **info}],
         "RepartitionSinkTopics": [],
         "RepartitionSourceTopics": [{"Name": f"{group_id}-repartition", **info}],
         "CopartitionGroups": []}]}
    # 17: the group epoch goes up one at a time; not validated until the internal topics
    # exist; the standby config the assignment used
    metas = [r["value"] for r in streams if r["type"] == "StreamsGroupMetadata" and r["value"]]
    assert [m["Epoch"] for m in metas] == list(range(2, 2 + len(metas)))
    assert metas[0]["ValidatedTopologyEpoch"] == -1 and metas[-1]["ValidatedTopologyEpoch"] == 0
    assert metas[-1]["LastAssignmentConfigs"] == [{"Key": "num.standby.replicas", "Value": "1"}]
    # the join writes 19, 23, 17 then 22, in one batch; the leave 22, 21, 19 tombstones, 17
    join = [r["type"] for r in streams if r["timestamp"] == streams[0]["timestamp"]]
    assert join[:4] == ["StreamsGroupMemberMetadata", "StreamsGroupTopology",
                        "StreamsGroupMetadata", "StreamsGroupCurrentMemberAssignment"], join
    gone = [i for i, r in enumerate(streams) if r["key"].get("MemberId") == a_id
            and r["value"] is None]
    assert [streams[i]["type"] for i in gone] == [
        "StreamsGroupCurrentMemberAssignment", "StreamsGroupTargetAssignmentMember",
        "StreamsGroupMemberMetadata"]
    assert gone == list(range(gone[0], gone[0] + 3))
    assert streams[gone[-1] + 1]["type"] == "StreamsGroupMetadata"
    # 20: increasing epochs, each at most the group epoch written before it, stamped when
    # the computation finished (not after the batch that carries it)
    group_epoch = 0
    last_target = (0, 0)
    for row in streams:
        if row["type"] == "StreamsGroupMetadata" and row["value"]:
            group_epoch = row["value"]["Epoch"]
        if row["type"] == "StreamsGroupTargetAssignmentMetadata" and row["value"]:
            epoch, stamp = row["value"]["AssignmentEpoch"], row["value"]["Timestamp"]
            assert last_target[0] < epoch <= group_epoch
            assert last_target[1] <= stamp <= row["timestamp"]
            last_target = (epoch, stamp)
    # 21 and 22: sorted task lists; active assignment epochs one per partition, none for
    # standbys; states Kafka knows
    for row in streams:
        value = row["value"]
        if row["type"] not in ("StreamsGroupTargetAssignmentMember",
                               "StreamsGroupCurrentMemberAssignment") or value is None:
            continue
        for name, entries in value.items():
            if not isinstance(entries, list):
                continue
            assert [e["SubtopologyId"] for e in entries] == sorted(
                {e["SubtopologyId"] for e in entries}), (name, entries)
            for e in entries:
                assert e["Partitions"] == sorted(set(e["Partitions"])) and e["Partitions"]
                if row["type"] == "StreamsGroupCurrentMemberAssignment":
                    if name.startswith("Active"):
                        assert len(e["AssignmentEpochs"]) == len(e["Partitions"])
                        assert all(0 < x <= value["MemberEpoch"] for x in e["AssignmentEpochs"])
                    else:
                        assert e["AssignmentEpochs"] in ([], None)
        if row["type"] == "StreamsGroupCurrentMemberAssignment":
            assert value["State"] in (1, 2, 3)
            assert value["PreviousMemberEpoch"] <= value["MemberEpoch"]
    # the log replayed: the last 22 and 21 records of the member still there are what
    # StreamsGroupDescribe said before the server stopped
    (member,) = described.members
    current = [r["value"] for r in streams if r["type"] == "StreamsGroupCurrentMemberAssignment"
               and r["key"]["MemberId"] == member.member_id][-1]
    target = [r["value"] for r in streams if r["type"] == "StreamsGroupTargetAssignmentMember"
              and r["key"]["MemberId"] == member.member_id][-1]
    assert current["MemberEpoch"] == member.member_epoch == described.assignment_epoch
    for role in ROLES:
        field = f"{role.capitalize()}Tasks"
        assert tasks_in(current[field]) == describe_tasks(member.assignment, role)
        assert tasks_in(target[field]) == describe_tasks(member.target_assignment, role)
    assert tasks_in(current["ActiveTasks"]) == all_tasks()
