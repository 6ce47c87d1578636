"""The rebalance timeline against real clients: what the coordinator says happened is what the
clients' own rebalance callbacks saw, partition by partition, and a running server's timeline
(``GET /timeline`` of the control endpoint) is the one its store gives offline
(``python -m coordinator log timeline``).

Each confluent-kafka consumer runs in its own process and prints its member id and every
``on_assign`` / ``on_revoke`` / ``on_lost`` callback with a wall-clock timestamp.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_coordinator.timeline import (
    Partition,
    Timeline,
    assert_no_partition_owned_twice,
    partitions_of,
    record_view,
)
from tests.harness import ServerProcess, wait_until

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "orders"
PARTITIONS = 6
ALL = {(TOPIC, p) for p in range(PARTITIONS)}
CLOCK_SLACK_MS = 2
"""The server stamps records in whole milliseconds."""

OVERRIDES = {
    "control.listener": "http://127.0.0.1:0",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "true",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}

CHILD = r"""
import json, select, sys, time
from confluent_kafka import Consumer
bootstrap, group, topic, protocol = sys.argv[1:5]
def emit(event, parts=(), **fields):
    print(json.dumps({"event": event, "t": time.time() * 1000,
                      "partitions": [[p.topic, p.partition] for p in parts], **fields}),
          flush=True)
conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "log_level": 0}
if protocol == "consumer":
    conf["group.protocol"] = "consumer"
else:
    conf.update({"partition.assignment.strategy": "cooperative-sticky",
                 "session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
c = Consumer(conf)
c.subscribe([topic], on_assign=lambda c, p: emit("assign", p),
            on_revoke=lambda c, p: emit("revoke", p), on_lost=lambda c, p: emit("lost", p))
member = None
try:
    while True:
        c.poll(0.05)
        current = c.memberid()
        if current and current != member:
            member = current
            emit("member", member=member)
        if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.readline():
            break
finally:
    c.close()
    emit("closed")
"""

Callback = tuple[str, frozenset[tuple[str, int]], float]


class Consumer:
    """A consumer process and the callbacks it reported."""

    def __init__(self, bootstrap: str, group: str, protocol: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, bootstrap, group, TOPIC, protocol],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self.rows.append(json.loads(line))

    def member_ids(self) -> list[str]:
        with self._lock:
            return [row["member"] for row in self.rows if row["event"] == "member"]

    def callbacks(self) -> list[Callback]:
        """Every callback that changed something: (assign | revoke | lost, partitions, ms)."""
        with self._lock:
            return [(row["event"], frozenset((t, p) for t, p in row["partitions"]), row["t"])
                    for row in self.rows
                    if row["event"] in ("assign", "revoke", "lost") and row["partitions"]]

    def owned(self) -> set[tuple[str, int]]:
        owned: set[tuple[str, int]] = set()
        for kind, partitions, _ in self.callbacks():
            owned = owned | partitions if kind == "assign" else owned - partitions
        return owned

    def closed(self) -> bool:
        with self._lock:
            return any(row["event"] == "closed" for row in self.rows)

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(20)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path / "data", OVERRIDES) as process:
        admin = AdminClient({"bootstrap.servers": process.bootstrap})
        for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS)]).values():
            future.result(10)
        yield process


@pytest.fixture
def consumers() -> Iterator[list[Consumer]]:
    started: list[Consumer] = []
    yield started
    for consumer in started:
        try:
            consumer.stop()
        except (subprocess.TimeoutExpired, OSError):
            consumer.proc.kill()


def settled(timeline: Timeline, live: list[Consumer]) -> bool:
    """The coordinator says the group is stable with these members, and their callbacks agree:
    every partition owned by exactly one of them."""
    if not timeline.is_stable(members=len(live)):
        return False
    owned = [consumer.owned() for consumer in live]
    union = [tp for parts in owned for tp in parts]
    return len(union) == len(set(union)) == PARTITIONS and set(union) == ALL


def wait_settled(server: ServerProcess, group: str, live: list[Consumer],
                 timeout: float = 30.0) -> Timeline:
    url = server.control_url
    assert url is not None, "the control endpoint is off"
    found: list[Timeline] = []

    def check() -> bool:
        found[:] = [Timeline.fetch(url, group)]
        return settled(found[0], live)

    wait_until(check, timeout, interval=0.05,
               message=f"{group} to settle with {len(live)} members")
    return found[0]


def scale_1_3_1(server: ServerProcess, consumers: list[Consumer], group: str,
                protocol: str) -> Timeline:
    """One member, three, one again; the timeline once the last one left too.

    The two leave one at a time, the group settled in between: a member handed the other's
    partitions while it is closing itself would be assigned them on the server without its
    application ever being told (its client revokes what its callbacks gave it), which is
    Kafka's behaviour but not a story the callbacks can be checked against."""
    first = Consumer(server.bootstrap, group, protocol)
    consumers.append(first)
    wait_settled(server, group, [first])
    consumers += [Consumer(server.bootstrap, group, protocol) for _ in range(2)]
    wait_settled(server, group, consumers)
    for position, consumer in enumerate(consumers[1:], start=1):
        consumer.stop()
        wait_settled(server, group, [first, *consumers[position + 1:]])
    first.stop()
    url = server.control_url
    assert url is not None

    def empty() -> Timeline | None:
        timeline = Timeline.fetch(url, group)
        return None if timeline.members() else timeline

    return wait_until(empty, 20, message="the last member to leave")


class ServerChange(NamedTuple):
    """One of a member's assignment changes as the coordinator's timeline says it."""

    timestamp: int
    kind: str
    """``assigned`` or ``revoked``."""
    partitions: frozenset[Partition]
    asked: frozenset[Partition]
    """Of a revocation: the partitions the coordinator had asked the member to give up (its
    ``revocation-requested``), or took with the member when it left: the member's heartbeat
    (its JoinGroup, classic) acknowledges that its client let them go. The rest of a
    revocation the coordinator never asked for: the member's heartbeat listed its owned
    partitions without them, so they were free at once (Kafka's ``CurrentAssignmentBuilder``),
    whether its client ever got them or not."""
    owned: frozenset[Partition]
    """What the member holds once the change is done."""


def server_changes(timeline: Timeline, member: str) -> list[ServerChange]:
    """The member's assignments and revocations in the timeline's order, each revocation split
    into what was asked for and what the member reported it did not hold."""
    owned: frozenset[Partition] = frozenset()
    requested: frozenset[Partition] = frozenset()
    changes = []
    for event in timeline.events:
        if event.get("member") != member:
            continue
        partitions = partitions_of(event)
        if event["kind"] == "revocation-requested":
            requested |= partitions
        elif event["kind"] == "assigned":
            owned |= partitions
            changes.append(ServerChange(event["timestamp"], "assigned", partitions, frozenset(),
                                        owned))
        elif event["kind"] == "revoked":
            owned -= partitions
            asked = partitions if event.get("removed") else partitions & requested
            requested -= partitions
            changes.append(ServerChange(event["timestamp"], "revoked", partitions, asked, owned))
    return changes


def run_fits(run: Sequence[ServerChange], before: frozenset[Partition],
             callback: Callback) -> bool:
    """Whether one of a client's callbacks can be the server's changes ``run`` (the callback
    takes the client from ``before`` to where the run ends): a KIP-848 client reconciles
    towards the latest target the coordinator sent it, so a target it had not got to when a
    newer one came is skipped (several of the server's changes, one callback). Causally:

    * what the coordinator gave (``assigned``) it gave before the client's callback;
    * a revocation it asked for, of partitions the callbacks had given the client, is this
      callback revoking them, and the acknowledgement came after it;
    * a revocation it did not ask for (the member said it did not hold them) came before the
      callback: the client's revoking them, if it had got them from the superseded target
      after all, is its reconciling the newer one the coordinator sent after it."""
    kind, partitions, at_ms = callback
    revoking = partitions if kind != "assign" else frozenset()
    for change in run:
        if change.kind == "assigned":
            if change.timestamp > at_ms + CLOCK_SLACK_MS:
                return False
            continue
        held_asked = change.asked & before
        if not held_asked <= revoking:
            return False  # acknowledged, yet its application was never told
        if held_asked and change.timestamp < at_ms - CLOCK_SLACK_MS:
            return False  # acknowledged before the client let them go
        if change.partitions - change.asked and change.timestamp > at_ms + CLOCK_SLACK_MS:
            return False
    return True


def align(changes: Sequence[ServerChange], callbacks: Sequence[Callback]) -> bool:
    """Whether the client's callbacks are the server's changes, in order, each callback one
    change or a run of them that the client reconciled at once (``run_fits``): every set of
    partitions the client's callbacks left it with is one the server's history passes through,
    in the same order, from nothing to what the member left with."""
    states = [frozenset[Partition]()] + [change.owned for change in changes]
    memo: dict[tuple[int, int], bool] = {}

    def matches(done: int, at: int) -> bool:
        """Callbacks[:done] matched, the client at the server's ``states[at]``."""
        if done == len(callbacks):
            return at == len(changes)
        key = (done, at)
        if key not in memo:
            kind, partitions, _ = callbacks[done]
            after = states[at] | partitions if kind == "assign" else states[at] - partitions
            memo[key] = any(
                states[end] == after and run_fits(changes[at:end], states[at], callbacks[done])
                and matches(done + 1, end)
                for end in range(at + 1, len(changes) + 1))
        return memo[key]

    return matches(0, 0)


def describe(changes: Sequence[ServerChange], callbacks: Sequence[Callback]) -> str:
    def show(parts: frozenset[Partition]) -> str:
        return ",".join(str(p[-1]) for p in sorted(parts))

    server = [f"{c.timestamp} {c.kind} {show(c.partitions)}"
              + (f" (not asked: {show(c.partitions - c.asked)})"
                 if c.kind == "revoked" and c.partitions - c.asked else "") for c in changes]
    client = [f"{at_ms:.1f} {kind} {show(parts)}" for kind, parts, at_ms in callbacks]
    return f"server: {'; '.join(server)}\nclient: {'; '.join(client)}"


def check_against_callbacks(timeline: Timeline, consumers: list[Consumer]) -> None:
    """Per member: its callbacks are the server's assignments and revocations, in the same
    order; a revocation acknowledged after the client made it, an assignment given before the
    client got it. A KIP-848 client that got a newer target before it reconciled one (under
    load: it waits for the topic's metadata before its first) goes to the newer one at once:
    one callback for what the server's timeline says in several changes, and the partitions a
    superseded target gave and the next took back (its heartbeat said it did not hold them:
    the coordinator did not ask) perhaps never in a callback (``align``)."""
    assert len(consumers) == 3
    seen_members = set()
    for consumer in consumers:
        assert consumer.closed()
        ids = consumer.member_ids()
        assert len(ids) == 1, f"the member id changed: {ids}"  # no rejoin in this scenario
        member = ids[0]
        seen_members.add(member)
        callbacks = consumer.callbacks()
        changes = server_changes(timeline, member)
        assert align(changes, callbacks), f"{member}:\n{describe(changes, callbacks)}"
        history = timeline.assignment_history(member)
        assert history[-1].owned == frozenset() and history[-1].removed
    joined = {e["member"] for e in timeline.of_kind("member-joined")}
    assert joined == seen_members
    assert {e["member"] for e in timeline.of_kind("member-left")} == seen_members
    assert_no_partition_owned_twice(timeline.events)


def check_against_store(server: ServerProcess, timeline: Timeline, group: str) -> None:
    """What the running server said is what its store says: after a crash and restart (the
    server rebuilds the timeline from its records as it loads them, without what only its
    memory knew), and offline."""
    server.restart()
    url = server.control_url
    assert url is not None
    wait_until(lambda: Timeline.fetch(url, group).events == record_view(timeline.events), 20,
               message="the restarted server's timeline")
    server.stop()
    out = subprocess.run([sys.executable, "-m", "coordinator", "log", "timeline",
                          str(server.log_dir), "--group", group],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    offline = [json.loads(line) for line in out.stdout.splitlines()]
    assert offline, out.stderr
    assert record_view(timeline.events) == offline


@pytest.mark.slow  # about 5 s: 4 consumer processes and a restart
def test_a_consumer_protocol_group_scaling_1_3_1(server: ServerProcess,
                                                 consumers: list[Consumer]) -> None:
    timeline = scale_1_3_1(server, consumers, "kip848", "consumer")
    check_against_callbacks(timeline, consumers)
    # the story of the group: three joins, the targets that went with them, two revocations
    # asked of the first member, and who left and why
    assert timeline.rebalance_count() == len(timeline.of_kind("epoch-bumped")) >= 6
    computed = timeline.of_kind("target-computed")
    assert computed and all(e["assignor"] == "uniform" and e["duration_ms"] > 0
                            and e["offloaded"] is True for e in computed)
    assert [e["members"] for e in computed][:3] == [1, 2, 3]
    assert sum(e["moved"] for e in computed) >= PARTITIONS
    first = consumers[0].member_ids()[0]
    asked = [e for e in timeline.of_kind("revocation-requested") if e["member"] == first]
    assert asked, "the first member was never asked to revoke"
    reasons = {e["member"]: (e["reason"], e["fenced"]) for e in timeline.of_kind("member-left")}
    assert set(reasons.values()) == {("left", False)}
    stables = [e["members"] for e in timeline.of_kind("group-stable")]
    assert stables[0] == 1 and 3 in stables and stables[-1] == 1
    assert Timeline.fetch(server.control_url or "", "no-such-group").events == []
    check_against_store(server, timeline, "kip848")


@pytest.mark.slow  # about 5 s
def test_a_cooperative_classic_group_scaling_1_3_1(server: ServerProcess,
                                                   consumers: list[Consumer]) -> None:
    timeline = scale_1_3_1(server, consumers, "cooperative", "classic")
    check_against_callbacks(timeline, consumers)
    assert {e["group_type"] for e in timeline.events} == {"classic"}
    computed = timeline.of_kind("target-computed")
    assert {e["protocol"] for e in computed} == {"cooperative-sticky"}
    # incremental: the first member gave partitions up in one generation and the others got
    # them in the next, and the coordinator remembered each rebalance's start
    first = consumers[0].member_ids()[0]
    asked = [e for e in timeline.of_kind("revocation-requested") if e["member"] == first]
    revoked = [e for e in timeline.of_kind("revoked") if e["member"] == first]
    assert asked and revoked and revoked[0]["epoch"] == asked[0]["epoch"] + 1
    assert timeline.of_kind("rebalance-started")
    check_against_store(server, timeline, "cooperative")
