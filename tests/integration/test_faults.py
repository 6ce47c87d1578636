"""Fault injection through the HTTP control endpoint (``control.listener``), each kind observed
by a real client: librdkafka (confluent-kafka) gets the injected error code, waits out a delay,
reconnects after a closed connection, loses a frozen member's partitions to the other member
after the session timeout (and not before), looks for the coordinator again while a group is
unavailable and recovers; a forced rebalance gives the clients a new generation or assignment
epoch; injections are logged and counted in the metrics.

One server for the module (its consumer groups' session timeout is 3 s); each test uses groups
and topics of its own and removes its rules.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import protocol
from coordinator.testing.server_process import ROOT
from kafka_coordinator.control import ControlClient, ControlError
from kafka_coordinator.faults import Faults
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, kio_class

SESSION_MS = 3000
HEARTBEAT_MS = 500
OVERRIDES = {
    "control.listener": "http://127.0.0.1:0",
    "metrics.listener": "http://127.0.0.1:0",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "false",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("faults") / "data", OVERRIDES) as process:
        process.wait_loaded()
        yield process


@pytest.fixture
def faults(server: ServerProcess) -> Iterator[Faults]:
    assert server.control_url is not None, "the server did not log its control listener"
    faults = Faults(ControlClient(server.control_url))
    yield faults
    faults.clear()


def create_topic(server: ServerProcess, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(10)


class Member:
    """A confluent-kafka consumer polled on a thread, with what its rebalance callbacks saw
    (``(monotonic time, kind, partitions)``) and its member id."""

    def __init__(self, server: ServerProcess, group: str, topic: str, *,
                 protocol_name: str = "classic", config: dict[str, Any] | None = None) -> None:
        conf: dict[str, Any] = {"bootstrap.servers": server.bootstrap, "group.id": group,
                                "enable.auto.commit": False, **(config or {})}
        if protocol_name == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.setdefault("session.timeout.ms", 6000)
            conf.setdefault("heartbeat.interval.ms", 300)
        self.consumer = Consumer(conf)
        self.events: list[tuple[float, str, frozenset[int]]] = []
        self.member_id = ""
        self._lock = threading.Lock()
        self._calls: list[tuple[Callable[[Consumer], Any], threading.Event, list[Any]]] = []
        self._stop = threading.Event()
        self.consumer.subscribe([topic], on_assign=self._callback("assign"),
                                on_revoke=self._callback("revoke"),
                                on_lost=self._callback("lost"))
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _callback(self, kind: str) -> Callable[[Consumer, list[TopicPartition]], None]:
        def record(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            with self._lock:
                self.member_id = consumer.memberid() or self.member_id
                self.events.append((time.monotonic(), kind,
                                    frozenset(p.partition for p in partitions)))
        return record

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.05)
            with self._lock:
                calls, self._calls = self._calls, []
            for call, done, out in calls:  # the consumer is used from this thread only
                try:
                    out.append(call(self.consumer))
                except Exception as exc:
                    out.append(exc)
                done.set()
        self.consumer.close()

    def call(self, work: Callable[[Consumer], Any], timeout: float = 20.0) -> Any:
        """``work(consumer)`` on the polling thread; its result (or the exception it raised)."""
        done, out = threading.Event(), list[Any]()
        with self._lock:
            self._calls.append((work, done, out))
        assert done.wait(timeout), "the consumer's thread did not answer"
        return out[0]

    def owned(self, before: float | None = None) -> frozenset[int]:
        owned: set[int] = set()
        with self._lock:
            events = list(self.events)
        for at, kind, partitions in events:
            if before is not None and at >= before:
                break
            if kind == "assign":
                owned |= partitions
            else:
                owned -= partitions
        return frozenset(owned)

    def kinds(self, since: float = 0.0) -> list[str]:
        with self._lock:
            return [kind for at, kind, _ in self.events if at >= since]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(15)


@pytest.fixture
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    yield started
    for member in started:
        member.close()


def fault_events(server: ServerProcess, rule: int) -> list[dict[str, Any]]:
    return [e for e in server.events_of("fault injected") if e.get("rule") == rule]


def commit(member: Member, topic: str, offset: int) -> Any:
    return member.call(lambda c: c.commit(offsets=[TopicPartition(topic, 0, offset)],
                                          asynchronous=False))


# --- error -------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("protocol_name", ["classic", "consumer"])
def test_a_commit_fails_with_the_injected_error_once(server: ServerProcess, faults: Faults,
                                                     members: list[Member],
                                                     protocol_name: str) -> None:
    topic, group = f"commit-{protocol_name}", f"commit-{protocol_name}"
    create_topic(server, topic, 1)
    member = Member(server, group, topic, protocol_name=protocol_name)
    members.append(member)
    wait_until(lambda: member.owned() == {0}, 15, message="the first assignment")
    fault = faults.error("OffsetCommit", "REBALANCE_IN_PROGRESS", group=group, count=1)

    failed = commit(member, topic, 5)
    assert isinstance(failed, KafkaException), failed
    assert failed.args[0].name() == "REBALANCE_IN_PROGRESS"
    assert fault.info() is None  # count 1: gone after one injection
    committed = commit(member, topic, 6)  # the next one goes through
    assert not isinstance(committed, Exception), committed
    assert committed[0].offset == 6 and committed[0].error is None
    # the server's log comes through a pipe: its line may not be read yet
    (event,) = wait_until(lambda: fault_events(server, fault.id), 10,
                          message="the injection's log line")
    assert (event["kind"], event["api"], event["group"], event["member"],
            event["error"]) == ("error", "OffsetCommit", group, member.member_id,
                                "REBALANCE_IN_PROGRESS")


def test_a_heartbeat_error_makes_the_client_rejoin(server: ServerProcess, faults: Faults,
                                                   members: list[Member]) -> None:
    topic = group = "heartbeat-error"
    create_topic(server, topic, 2)
    member = Member(server, group, topic)
    members.append(member)
    wait_until(lambda: member.owned() == {0, 1}, 15, message="the first assignment")
    generations = len(server.events_of("join phase complete"))
    since = time.monotonic()
    fault = faults.error("Heartbeat", "REBALANCE_IN_PROGRESS", group=group, count=1)
    # librdkafka rejoins: an eager rebalance revokes and assigns again, in a new generation
    wait_until(lambda: member.kinds(since)[-2:] == ["revoke", "assign"], 10,
               message="the client to rejoin after the injected error")
    assert member.owned() == {0, 1}
    assert len(server.events_of("join phase complete")) > generations
    assert len(fault_events(server, fault.id)) == 1


# --- delay -------------------------------------------------------------------------------------
def test_a_delay_is_latency_the_client_sees_and_no_one_else(server: ServerProcess,
                                                           faults: Faults,
                                                           members: list[Member]) -> None:
    topic = group = "delay"
    create_topic(server, topic, 1)
    member = Member(server, group, topic)
    members.append(member)
    wait_until(lambda: member.owned() == {0}, 15, message="the first assignment")

    def fetch_committed() -> float:
        started = time.monotonic()
        result = member.call(lambda c: c.committed([TopicPartition(topic, 0)], timeout=10))
        assert not isinstance(result, Exception), result
        return time.monotonic() - started

    baseline = min(fetch_committed() for _ in range(3))
    faults.delay("OffsetFetch", 800, group=group, count=1)
    others: list[float] = []

    def another_connection() -> None:  # meanwhile, on another connection
        time.sleep(0.2)
        with WireClient(server.bootstrap) as wire:
            started = time.monotonic()
            wire.request(protocol.make(kio_class("api_versions", 3, "request",
                                                 "ApiVersionsRequest"),
                                       client_software_name="t", client_software_version="1"))
            others.append(time.monotonic() - started)

    thread = threading.Thread(target=another_connection)
    thread.start()
    delayed = fetch_committed()
    thread.join(10)
    assert baseline < 0.3
    assert 0.8 <= delayed < 3.0
    assert others and others[0] < 0.3, "a delay held up another connection"
    assert fetch_committed() < 0.3  # count 1: the next one is not delayed


# --- close -------------------------------------------------------------------------------------
def test_a_closed_connection_is_seen_and_the_client_reconnects(
        server: ServerProcess, faults: Faults, members: list[Member]) -> None:
    topic = group = "close"
    create_topic(server, topic, 1)
    seen: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    logger = logging.getLogger("test_faults.close")
    logger.addHandler(Capture())
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    member = Member(server, group, topic, config={"client.id": "closing-app", "logger": logger})
    members.append(member)
    wait_until(lambda: member.owned() == {0}, 15, message="the first assignment")
    fault = faults.close_connection("OffsetFetch", client_id="closing-app")

    result = member.call(lambda c: c.committed([TopicPartition(topic, 0)], timeout=10))
    assert not isinstance(result, Exception), result  # answered on a new connection
    wait_until(lambda: any("Disconnected" in line for line in seen), 5,
               message="librdkafka to log the disconnection")
    reason = f"fault injected: close (rule {fault.id})"
    # the server logs the close once the socket is closed, so the client may see it first
    server.wait_event("connection closed", reason=reason)
    assert len(fault_events(server, fault.id)) == 1 and fault.info() is None
    # and the group goes on: a commit on the new connection works
    assert not isinstance(commit(member, topic, 3), Exception)


# --- freeze ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_frozen_members_partitions_move_after_its_session_timeout(
        server: ServerProcess, faults: Faults, members: list[Member]) -> None:
    topic = group = "freeze"
    create_topic(server, topic, 4)
    frozen = Member(server, group, topic, protocol_name="consumer")
    other = Member(server, group, topic, protocol_name="consumer")
    members += [frozen, other]
    wait_until(lambda: len(frozen.owned()) == 2 and len(other.owned()) == 2, 20,
               message="two members with two partitions each")
    moving = frozen.owned()
    frozen_at = time.monotonic()
    fault = faults.freeze_member(group, frozen.member_id)

    wait_until(lambda: moving <= other.owned(), SESSION_MS / 1000 + 5,
               message="the frozen member's partitions to move")
    moved_at = next(at for at, kind, parts in other.events
                    if kind == "assign" and parts & moving and at >= frozen_at)
    # the session counts from the last heartbeat processed, at most a heartbeat interval
    # before the freeze: never before that
    earliest = (SESSION_MS - HEARTBEAT_MS) / 1000 - 0.2
    assert not other.owned(before=frozen_at + earliest) & moving
    assert earliest <= moved_at - frozen_at <= SESSION_MS / 1000 + 3
    server.wait_event("consumer group member session expired", group_id=group,
                      member_id=frozen.member_id)
    # then its held heartbeat is answered: the client learns it was fenced and rejoins
    wait_until(lambda: "lost" in frozen.kinds(frozen_at), 10, message="the frozen member to "
               "learn it lost its partitions")
    assert fault.info() is None
    assert fault_events(server, fault.id)
    wait_until(lambda: frozen.owned() and len(other.owned()) == 2, 15,
               message="the member to rejoin and get partitions again")


def test_a_freeze_of_an_unknown_member_is_refused(server: ServerProcess,
                                                  faults: Faults) -> None:
    with pytest.raises(ControlError) as refused:
        faults.freeze_member("no-such-group", "nobody")
    assert refused.value.status == 404
    assert "nobody is not a member of group no-such-group" in refused.value.message


# --- unavailable --------------------------------------------------------------------------------
@pytest.mark.slow
def test_an_unavailable_coordinator_is_looked_for_again_then_used(
        server: ServerProcess, faults: Faults, members: list[Member]) -> None:
    topic = group = "unavailable"
    create_topic(server, topic, 2)
    # librdkafka may take a few seconds to settle on the coordinator it found again (it
    # reconnects to it more than once): a session long enough that it is not expired meanwhile
    # the consumer group's state in librdkafka's statistics, with when librdkafka took them
    # (its "ts", microseconds of the monotonic clock Python's time.monotonic reads)
    states: list[tuple[float, str]] = []

    def statistics(stats: str) -> None:
        taken = json.loads(stats)
        states.append((taken["ts"] / 1e6, str(taken.get("cgrp", {}).get("state"))))

    member = Member(server, group, topic, config={"session.timeout.ms": 20000,
                                                  "statistics.interval.ms": 50,
                                                  "stats_cb": statistics})
    members.append(member)
    wait_until(lambda: member.owned() == {0, 1}, 15, message="the first assignment")
    seconds = 1.5
    started = time.monotonic()
    fault = faults.coordinator_unavailable(group, seconds=seconds)

    # Commit once the client has lost its coordinator (told NOT_COORDINATOR, or none found, it
    # left the "up" state to look for one), so the commit waits in the client for a
    # coordinator. A commit sent before the client noticed gets NOT_COORDINATOR, and librdkafka
    # (2.x) then keeps its retry on the coordinator connection that has no address yet: when
    # FindCoordinator finds the coordinator again, the reconnect fails that retry with a
    # transport error, which marks the coordinator dead again, and so on until the session
    # times out (UNKNOWN_MEMBER_ID). That loop is the client's, whatever the broker: Kafka's
    # answers are the same (NOT_COORDINATOR, then COORDINATOR_NOT_AVAILABLE with no node from
    # FindCoordinator), and on a slow machine the commit is more often the first to meet them.
    # Only statistics taken after the rule was in place count: the client's first "up" may be
    # later than the last statistics delivered before it (on a slow machine the rule comes
    # within one statistics interval of the first assignment).
    def looking() -> bool:
        return any(at > started and state != "up" for at, state in states)

    wait_until(lambda: looking() or fault.info() is None, 10, interval=0.01,
               message="the client to look for the coordinator")
    assert looking(), "the client did not look for the coordinator in time"
    result = commit(member, topic, 5)
    done = time.monotonic() - started
    assert not isinstance(result, Exception), result
    assert result[0].error is None
    assert done >= seconds, "the commit went through while the group was unavailable"
    injected = fault_events(server, fault.id)
    apis = {event["api"] for event in injected}
    # the client looked for the coordinator again (told NOT_COORDINATOR by a heartbeat or the
    # commit, or on its periodic query), and FindCoordinator found none until the window ended
    assert "FindCoordinator" in apis
    assert apis <= {"FindCoordinator", "OffsetCommit", "Heartbeat", "OffsetFetch"}
    assert all(event["error"] == "NOT_COORDINATOR" for event in injected)
    assert fault.info() is None
    # recovered: the group kept its member and its assignment, offsets work
    assert member.owned() == {0, 1}
    committed = member.call(lambda c: c.committed([TopicPartition(topic, 0)], timeout=10))
    assert committed[0].offset == 5


# --- force rebalance ----------------------------------------------------------------------------
def test_a_forced_rebalance_gives_a_classic_group_a_new_generation(
        server: ServerProcess, faults: Faults, members: list[Member]) -> None:
    topic = group = "force-classic"
    create_topic(server, topic, 2)
    member = Member(server, group, topic)
    members.append(member)
    wait_until(lambda: member.owned() == {0, 1}, 15, message="the first assignment")
    since = time.monotonic()
    answer = faults.force_rebalance(group)
    assert answer["type"] == "classic" and answer["state"] == "PreparingRebalance"
    wait_until(lambda: member.kinds(since)[-2:] == ["revoke", "assign"], 15,
               message="the client to rejoin")
    started = server.wait_event("rebalance started", group_id=group,
                                reason="forced by the control endpoint")
    completed = [e["generation"] for e in server.events_of("join phase complete")
                 if e.get("group_id") == group]
    assert completed[-1] == started["generation"] + 1


def test_a_forced_rebalance_gives_consumers_a_new_assignment_epoch(
        server: ServerProcess, faults: Faults, members: list[Member]) -> None:
    topic = group = "force-consumer"
    create_topic(server, topic, 2)
    member = Member(server, group, topic, protocol_name="consumer")
    members.append(member)
    wait_until(lambda: member.owned() == {0, 1}, 15, message="the first assignment")

    def describe() -> tuple[int, int, int]:
        request = kio_class("consumer_group_describe", 0, "request",
                            "ConsumerGroupDescribeRequest")
        with WireClient(server.bootstrap) as wire:
            (described,) = wire.request(protocol.make(request, group_ids=(group,))).groups
        (found,) = described.members
        return described.group_epoch, described.assignment_epoch, found.member_epoch

    group_epoch, _, member_epoch = describe()
    assert member_epoch == group_epoch
    answer = faults.force_rebalance(group)
    assert answer == {"group": group, "type": "consumer", "group_epoch": group_epoch + 1,
                      "rebalancing": True}
    # the member's next heartbeat computes the new target; the client takes its epoch
    wait_until(lambda: describe() == (group_epoch + 1,) * 3, 10,
               message="the member to reconcile to the new epoch")
    assert member.owned() == {0, 1}  # sticky: the same partitions, a new epoch


def test_forcing_a_rebalance_of_no_group_is_404(faults: Faults) -> None:
    with pytest.raises(ControlError) as refused:
        faults.force_rebalance("never-seen")
    assert refused.value.status == 404


# --- metrics, listing and the HTTP surface ------------------------------------------------------
def test_injected_faults_are_counted_in_the_metrics(server: ServerProcess, faults: Faults,
                                                    members: list[Member]) -> None:
    topic = group = "counted"
    create_topic(server, topic, 1)
    member = Member(server, group, topic)
    members.append(member)
    wait_until(lambda: member.owned() == {0}, 15, message="the first assignment")

    def injected() -> float:
        assert server.metrics_url is not None
        with urllib.request.urlopen(server.metrics_url + "/metrics", timeout=10) as response:
            text = response.read().decode()
        line = ('kafka_server_group_coordinator_metrics_faults_injected_total'
                '{api="OffsetCommit",kind="error"} ')
        return sum(float(row[len(line):]) for row in text.splitlines() if row.startswith(line))

    before = injected()  # other tests of the module may have injected some
    faults.error("OffsetCommit", "OFFSET_METADATA_TOO_LARGE", group=group, count=2)
    for offset in (1, 2):
        failed = commit(member, topic, offset)
        assert isinstance(failed, KafkaException), failed
        assert failed.args[0].name() == "OFFSET_METADATA_TOO_LARGE"
    assert not isinstance(commit(member, topic, 3), Exception)
    assert injected() - before == 2


def test_rules_are_listed_with_what_is_left_and_removed(faults: Faults) -> None:
    first = faults.error(None, "NOT_COORDINATOR", group="listed", seconds=60)
    second = faults.delay("Fetch", 10, client_id="nobody", count=3)
    listed = {rule["id"]: rule for rule in faults.list()}
    assert listed[first.id]["error"] == "NOT_COORDINATOR" and listed[first.id]["api"] is None
    assert 59 < listed[first.id]["remaining_seconds"] <= 60
    assert listed[second.id]["remaining_count"] == 3 and listed[second.id]["delay_ms"] == 10
    assert second.remove() and not second.remove()
    assert faults.clear() == 1 and faults.list() == []


def post(url: str, data: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=data, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize("body, words", [
    (b"{not json", "the body is not JSON"),
    (b"", "expected a JSON body"),
    (b'{"kind": "meltdown"}', "unknown kind 'meltdown'"),
    (b'{"kind": "error", "api": "OffsetCommit", "error": "NO_SUCH_ERROR"}',
     "unknown error 'NO_SUCH_ERROR'"),
    (b'{"kind": "error", "api": "OffsetKommit", "error": 27}', "unknown API 'OffsetKommit'"),
])
def test_bad_requests_are_400_with_a_message(server: ServerProcess, body: bytes,
                                             words: str) -> None:
    assert server.control_url is not None
    status, answer = post(server.control_url + "/faults", body)
    assert status == 400
    assert words in answer["error"]


def test_health_and_unknown_routes(server: ServerProcess) -> None:
    assert server.control_url is not None
    control = ControlClient(server.control_url)
    assert control.health()["status"] == "ok"
    with pytest.raises(ControlError) as missing:
        control.get("/nothing-here")
    assert missing.value.status == 404
    with pytest.raises(ControlError) as wrong:
        control.request("PUT", "/faults")
    assert wrong.value.status == 405


def test_a_control_listener_off_the_loopback_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "coordinator", "serve",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "metrics.listener=",
         "--override", "control.listener=http://0.0.0.0:0",
         "--override", f"log.dirs={tmp_path / 'data'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2, result.stderr
    assert "Invalid value http://0.0.0.0:0 for configuration control.listener" in result.stderr
    assert "loopback" in result.stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.slow
def test_the_control_endpoint_is_off_by_default(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as plain:
        assert plain.control_url is None
        assert plain.event("control listening") is None
