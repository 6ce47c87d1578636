"""Client-side assignors (seed 003, the KIP-848 draft) end to end: a Python assignor
(``kafka_coordinator.client_assignor``) assigns a group of real confluent-kafka
``group.protocol=consumer`` consumers; wrong installations get the draft's errors on the wire;
with the setting off the draft's APIs are neither advertised nor served."""

from __future__ import annotations

import datetime
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

import protocol
from kafka_coordinator.client_assignor import ClientAssignor, GroupState
from protocol.client_assignors import (
    INSTALL_ASSIGNMENT_KEY,
    INVALID_ASSIGNMENT,
    PREPARE_ASSIGNMENT_KEY,
    classes,
)
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, kio_class

OVERRIDES = {
    "group.consumer.client.assignors.enable": "true",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "false",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("csa") / "data", OVERRIDES) as process:
        admin = AdminClient({"bootstrap.servers": process.bootstrap})
        for future in admin.create_topics([NewTopic("orders", 6, 1),
                                           NewTopic("audit", 2, 1)]).values():
            future.result(10)
        yield process


def _advertised(bootstrap: str) -> dict[int, tuple[int, int]]:
    with WireClient(bootstrap) as wire:
        answer = wire.request(protocol.make(kio_class("api_versions", 3, "request",
                                                      "ApiVersionsRequest"),
                                            client_software_name="t",
                                            client_software_version="1"))
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in answer.api_keys}


def _consumer(bootstrap: str, group: str, client_id: str) -> Any:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "group.protocol": "consumer", "client.id": client_id,
                         "enable.auto.commit": False, "log_level": 0})
    consumer.subscribe(["orders", "audit"])
    return consumer


def _owned(consumer: Any) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in consumer.assignment()}


def by_client_suffix(state: GroupState) -> dict[str, dict[str, list[int]]]:
    """All of "orders" to the members whose client id ends in -a, all of "audit" to those
    ending in -b, round robin."""
    out: dict[str, dict[str, list[int]]] = {}
    for topic, suffix in (("orders", "-a"), ("audit", "-b")):
        members = sorted(m.member_id for m in state.members
                         if m.client_id.endswith(suffix) and topic in m.subscribed_topics)
        for p in range(state.topics.get(topic, 0)):
            if members:
                out.setdefault(members[p % len(members)], {}).setdefault(topic, []).append(p)
    return out


@pytest.mark.slow
def test_a_python_assignor_assigns_a_group_of_confluent_kafka_consumers(
        server: ServerProcess) -> None:
    assert PREPARE_ASSIGNMENT_KEY in _advertised(server.bootstrap)
    group = f"csa-{uuid.uuid4().hex[:6]}"
    consumers = []
    with ClientAssignor(server.bootstrap, group, by_client_suffix, name="by-suffix") as runner:
        try:
            for client_id in ("app-1-a", "app-2-a", "app-3-b"):
                consumers.append(_consumer(server.bootstrap, group, client_id))

            def settled() -> bool:
                for c in consumers:
                    c.poll(0.05)
                owned = [_owned(c) for c in consumers]
                return (owned[0] | owned[1] == {("orders", p) for p in range(6)}
                        and len(owned[0]) == 3 and len(owned[1]) == 3
                        and owned[2] == {("audit", 0), ("audit", 1)})

            wait_until(settled, timeout=30, message="the Python assignor's target")
            assert runner.installed, runner.errors
            state = runner.states[-1]
            assert state.assignor == "by-suffix"
            assert {m.client_id for m in state.members} >= {"app-1-a", "app-2-a", "app-3-b"}
            # one of the -a members leaves: the other takes all of "orders"
            consumers.pop(1).close()
            wait_until(lambda: settled_one(consumers), timeout=30,
                       message="the remaining -a member owns all of orders")
        finally:
            for c in consumers:
                c.close()
    assert not [e for e in runner.errors if not isinstance(e, ConnectionError)]


def settled_one(consumers: list[Any]) -> bool:
    for c in consumers:
        c.poll(0.05)
    return (_owned(consumers[0]) == {("orders", p) for p in range(6)}
            and _owned(consumers[1]) == {("audit", 0), ("audit", 1)})


@pytest.mark.slow
def test_a_member_that_does_not_install_in_time_is_passed_over_for_another(
        server: ServerProcess) -> None:
    group = f"csa-late-{uuid.uuid4().hex[:6]}"

    def broken(state: GroupState) -> dict[str, dict[str, list[int]]]:
        raise RuntimeError("this assignor never answers")

    late = ClientAssignor(server.bootstrap, group, broken, name="py", version=1,
                          rebalance_timeout_ms=1000)
    good = ClientAssignor(server.bootstrap, group, by_client_suffix, name="py", version=0)
    consumers: list[Any] = []
    with late, good:
        try:
            consumers = [_consumer(server.bootstrap, group, c) for c in ("x-a", "y-b")]

            def settled() -> bool:
                for c in consumers:
                    c.poll(0.05)
                return (_owned(consumers[0]) == {("orders", p) for p in range(6)}
                        and _owned(consumers[1]) == {("audit", 0), ("audit", 1)})

            wait_until(settled, timeout=30, message="the second assignor's target")
        finally:
            for c in consumers:
                c.close()
        # the higher version was asked first and failed; after its rebalance timeout the
        # coordinator asked the other, which installed
        assert late.states and any(isinstance(e, RuntimeError) for e in late.errors)
        assert not late.installed and good.installed


# ------------------------------------------------------------------------------ raw frames
def _join(wire: WireClient, group: str, member_id: str, topics: tuple[str, ...],
          assignor: str | None) -> Any:
    request_type, _ = classes(68, 1) or (None, None)
    assert request_type is not None
    listed = None if assignor is None else (
        sys.modules[request_type.__module__].Assignor(
            name=assignor, minimum_version=0, maximum_version=0, reason=0, version=0,
            metadata=b""),)
    return wire.request(protocol.make(
        request_type, group_id=group, member_id=member_id, member_epoch=0,
        rebalance_timeout=datetime.timedelta(seconds=30), subscribed_topic_names=topics,
        topic_partitions=(), client_assignors=listed))


def _beat(wire: WireClient, group: str, member_id: str, epoch: int) -> Any:
    request_type, _ = classes(68, 1) or (None, None)
    assert request_type is not None
    return wire.request(protocol.make(request_type, group_id=group, member_id=member_id,
                                      member_epoch=epoch, topic_partitions=None))


def _prepare(wire: WireClient, group: str, member_id: str, epoch: int) -> Any:
    return wire.request(protocol.make(protocol.schema(PREPARE_ASSIGNMENT_KEY, 0).request_type,
                                      group_id=group, member_id=member_id,
                                      member_epoch=epoch))


def _install(wire: WireClient, group: str, member_id: str, epoch: int, group_epoch: int,
             members: list[tuple[str, uuid.UUID, list[int]]]) -> Any:
    cls = protocol.schema(INSTALL_ASSIGNMENT_KEY, 0).request_type
    module = sys.modules[cls.__module__]
    return wire.request(protocol.make(
        cls, group_id=group, member_id=member_id, member_epoch=epoch, group_epoch=group_epoch,
        error=0, members=tuple(module.Member(
            member_id=mid, metadata_version=0, metadata_bytes=b"",
            partitions=(module.TopicPartitions(topic_id=tid, partitions=tuple(parts)),))
            for mid, tid, parts in members)))


def test_wrong_installations_get_the_drafts_errors_on_the_wire(server: ServerProcess) -> None:
    group = f"raw-{uuid.uuid4().hex[:6]}"
    consumer_id, runner_id = str(uuid.uuid4()), str(uuid.uuid4())
    with WireClient(server.bootstrap) as wire:
        joined = _join(wire, group, consumer_id, ("orders",), None)
        assert joined.error_code == 0 and not joined.should_compute_assignment
        runner = _join(wire, group, runner_id, (), "raw")
        assert runner.error_code == 0

        def told() -> bool:
            nonlocal runner
            runner = _beat(wire, group, runner_id, runner.member_epoch)
            return bool(runner.should_compute_assignment)

        wait_until(told, timeout=10, message="ShouldComputeAssignment")
        epoch = runner.member_epoch
        assert _prepare(wire, "no-such-group", runner_id, epoch).error_code == 69
        assert _prepare(wire, group, str(uuid.uuid4()), epoch).error_code == 25
        assert _prepare(wire, group, runner_id, epoch + 7).error_code == 113  # stale
        assert _prepare(wire, group, consumer_id, joined.member_epoch).error_code == 25
        state = _prepare(wire, group, runner_id, epoch)
        assert state.error_code == 0 and state.assignor_name == "raw"
        orders = next(t for t in state.topics if t.topic_name == "orders")
        assert orders.num_partitions == 6
        assert {m.member_id for m in state.members} == {consumer_id, runner_id}
        ge = state.group_epoch
        bad = _install(wire, group, runner_id, epoch, ge, [(consumer_id, orders.topic_id, [6])])
        assert bad.error_code == INVALID_ASSIGNMENT and "does not exist" in bad.error_message
        twice = _install(wire, group, runner_id, epoch, ge,
                         [(consumer_id, orders.topic_id, [0]), (runner_id, orders.topic_id, [0])])
        assert twice.error_code == INVALID_ASSIGNMENT
        assert _install(wire, group, consumer_id, joined.member_epoch, ge,
                        []).error_code == 25  # not the chosen member
        assert _install(wire, group, runner_id, epoch, ge + 1, []).error_code == \
            INVALID_ASSIGNMENT  # a group epoch never handed out
        good = _install(wire, group, runner_id, epoch, ge,
                        [(consumer_id, orders.topic_id, [0, 1, 2])])
        assert good.error_code == 0, good.error_message
        # installed: the computation is over, so a second one is refused; a stale one too
        assert _install(wire, group, runner_id, epoch, ge, []).error_code == 25
        deadline = time.monotonic() + 10
        consumer = joined
        while time.monotonic() < deadline:
            consumer = _beat(wire, group, consumer_id, consumer.member_epoch)
            if consumer.assignment is not None and consumer.assignment.topic_partitions:
                break
        assert consumer.assignment is not None
        # the server-side assignor's first target gave it all six: it revokes three
        assert sorted(consumer.assignment.topic_partitions[0].partitions) == [0, 1, 2]


def test_off_the_apis_vanish_from_api_versions_and_close_the_connection(
        tmp_path: Path) -> None:
    off = {k: v for k, v in OVERRIDES.items() if k != "group.consumer.client.assignors.enable"}
    with ServerProcess(tmp_path / "data", off) as process:
        advertised = _advertised(process.bootstrap)
        assert PREPARE_ASSIGNMENT_KEY not in advertised
        assert INSTALL_ASSIGNMENT_KEY not in advertised
        with WireClient(process.bootstrap) as wire:
            wire.send(protocol.make(protocol.schema(PREPARE_ASSIGNMENT_KEY, 0).request_type,
                                    group_id="g", member_id="m", member_epoch=1))
            assert wire.is_closed()
        with WireClient(process.bootstrap) as wire:  # the tagged field is ignored
            member = str(uuid.uuid4())
            answer = _join(wire, "g-off", member, ("orders",), "py")
            assert answer.error_code == 0 and not answer.should_compute_assignment
