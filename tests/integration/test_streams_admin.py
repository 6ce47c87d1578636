"""Streams groups (KIP-1071) in the group APIs every client uses: ListGroups, DescribeGroups,
DeleteGroups, OffsetCommit / OffsetFetch with member epochs, and the streams metrics.

The members here are single raw StreamsGroupHeartbeat requests (the full protocol-level member
is in ``streams_member.py``): enough to make a group with a known member epoch.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import protocol
from protocol import ErrorCode
from tests.harness import ServerProcess, free_port, wait_until
from tests.integration.conftest import WireClient, kio_class
from tests.integration.metrics_scenario import present, scrape

TOPIC = "words"
PARTITIONS = 2


def _hb(name: str) -> type[Any]:
    return kio_class("streams_group_heartbeat", 0, "request", name)


def _topology() -> Any:
    sub = protocol.make(_hb("Subtopology"), subtopology_id="0", source_topics=(TOPIC,),
                        source_topic_regex=(), state_changelog_topics=(),
                        repartition_sink_topics=(), repartition_source_topics=(),
                        copartition_groups=())
    return protocol.make(_hb("Topology"), epoch=1, subtopologies=(sub,))


def heartbeat(wire: WireClient, group: str, member: str, epoch: int,
              owned: dict[str, tuple[int, ...]] | None = None) -> Any:
    """One StreamsGroupHeartbeat: a join (epoch 0) with the topology, a leave (-1), or a
    heartbeat reporting ``owned`` active tasks (None: unchanged)."""
    joining = epoch == 0
    tasks: Any = None
    if joining:
        tasks = ()
    elif owned is not None:
        tasks = tuple(protocol.make(_hb("TaskIds"), subtopology_id=s, partitions=p)
                      for s, p in sorted(owned.items()))
    extra: dict[str, Any] = {}
    if joining:
        extra = {"topology": _topology(), "process_id": str(uuid.uuid4()),
                 "rebalance_timeout": datetime.timedelta(seconds=30)}
    return wire.request(protocol.make(
        _hb("StreamsGroupHeartbeatRequest"), group_id=group, member_id=member,
        member_epoch=epoch, endpoint_information_epoch=-1, active_tasks=tasks,
        standby_tasks=None if tasks is None else (), warmup_tasks=None if tasks is None else (),
        client_tags=() if joining else None, task_offsets=None, task_end_offsets=None,
        **extra))


def stable_member(wire: WireClient, group: str, member: str) -> tuple[int, dict[str, Any]]:
    """Join and heartbeat until the member holds every task; (its epoch, its tasks)."""
    state: dict[str, Any] = {"epoch": 0, "tasks": {}}

    def step() -> bool:
        owned = None if state["epoch"] == 0 else state["tasks"]
        answer = heartbeat(wire, group, member, state["epoch"], owned)
        assert answer.error_code == ErrorCode.none, answer
        state["epoch"] = answer.member_epoch
        if answer.active_tasks is not None:
            state["tasks"] = {t.subtopology_id: tuple(t.partitions) for t in answer.active_tasks}
        return bool(state["tasks"]) and not answer.status

    wait_until(step, 20, interval=0.1, message="the member to hold its tasks")
    return state["epoch"], state["tasks"]


def commit(wire: WireClient, group: str, member: str, epoch: int, version: int = 9
           ) -> ErrorCode:
    def cls(name: str) -> type[Any]:
        return kio_class("offset_commit", version, "request", name)

    response = wire.request(protocol.make(
        cls("OffsetCommitRequest"), group_id=group, generation_id_or_member_epoch=epoch,
        member_id=member, topics=(protocol.make(cls("OffsetCommitRequestTopic"), name=TOPIC,
                                                partitions=(protocol.make(
                                                    cls("OffsetCommitRequestPartition"),
                                                    partition_index=0, committed_offset=5,
                                                    committed_leader_epoch=-1,
                                                    committed_metadata=""),)),)))
    (topic,) = response.topics
    (partition,) = topic.partitions
    error: ErrorCode = partition.error_code
    return error


def fetch(wire: WireClient, group: str, member: str | None, epoch: int) -> tuple[ErrorCode, int]:
    def cls(name: str) -> type[Any]:
        return kio_class("offset_fetch", 9, "request", name)

    response = wire.request(protocol.make(
        cls("OffsetFetchRequest"), groups=(protocol.make(
            cls("OffsetFetchRequestGroup"), group_id=group, member_id=member, member_epoch=epoch,
            topics=(protocol.make(cls("OffsetFetchRequestTopics"), name=TOPIC,
                                  partition_indexes=(0,)),)),), require_stable=False))
    (found,) = response.groups
    if found.error_code != ErrorCode.none:
        return found.error_code, -1
    return ErrorCode.none, found.topics[0].partitions[0].committed_offset


def list_groups(wire: WireClient) -> dict[str, tuple[str, str]]:
    response = wire.request(protocol.make(
        kio_class("list_groups", 5, "request", "ListGroupsRequest"), states_filter=(),
        types_filter=()))
    return {g.group_id: (g.group_type, g.group_state) for g in response.groups}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[ServerProcess, int]]:
    port = free_port()
    with ServerProcess(tmp_path, {"group.streams.initial.rebalance.delay.ms": "0",
                                  "group.streams.assignment.interval.ms": "0",
                                  "metrics.listener": f"http://127.0.0.1:{port}"}).start() as s:
        # the raw heartbeats below take any error as a failure: no COORDINATOR_LOAD_IN_PROGRESS
        s.wait_loaded()
        yield s, port


@pytest.mark.slow
def test_streams_group_in_the_group_apis(server: tuple[ServerProcess, int]) -> None:
    process, metrics_port = server
    with WireClient(process.bootstrap) as wire:
        create = kio_class("create_topics", 7, "request", "CreateTopicsRequest")
        creatable = kio_class("create_topics", 7, "request", "CreatableTopic")
        created = wire.request(protocol.make(create, topics=(protocol.make(
            creatable, name=TOPIC, num_partitions=PARTITIONS, replication_factor=1),),
            timeout=datetime.timedelta(seconds=10)))
        assert created.topics[0].error_code == ErrorCode.none
        epoch, tasks = stable_member(wire, "app", "m1")
        assert tasks == {"0": (0, 1)}

        # ListGroups: type streams, Kafka's state names
        assert list_groups(wire)["app"] == ("streams", "Stable")

        # DescribeGroups knows classic groups only (v6: with the error, as Kafka)
        described = wire.request(protocol.make(
            kio_class("describe_groups", 6, "request", "DescribeGroupsRequest"),
            groups=("app",), include_authorized_operations=False))
        assert described.groups[0].error_code == ErrorCode.group_id_not_found

        # OffsetCommit / OffsetFetch with the member epoch
        assert commit(wire, "app", "m1", epoch) == ErrorCode.none
        assert commit(wire, "app", "m1", epoch + 1) == ErrorCode.stale_member_epoch
        assert commit(wire, "app", "nobody", epoch) == ErrorCode.unknown_member_id
        assert commit(wire, "app", "m1", epoch, version=8) == ErrorCode.unsupported_version
        assert fetch(wire, "app", "m1", epoch) == (ErrorCode.none, 5)
        assert fetch(wire, "app", "m1", epoch + 1) == (ErrorCode.stale_member_epoch, -1)
        assert fetch(wire, "app", "nobody", epoch) == (ErrorCode.unknown_member_id, -1)
        assert fetch(wire, "app", None, -1) == (ErrorCode.none, 5)  # an admin client

        samples = scrape(f"http://127.0.0.1:{metrics_port}/metrics")
        assert present(samples, "streams-group-count", state="stable") == 1
        assert present(samples, "streams-group-count", state="empty") == 0
        assert present(samples, "streams-group-rebalance-count") >= 1

        # DeleteGroups: not while the member is in it; then the group and its offsets go
        delete = kio_class("delete_groups", 2, "request", "DeleteGroupsRequest")
        answer = wire.request(protocol.make(delete, groups_names=("app",)))
        assert answer.results[0].error_code == ErrorCode.non_empty_group
        left = heartbeat(wire, "app", "m1", -1)
        assert left.error_code == ErrorCode.none and left.member_epoch == -1
        assert list_groups(wire)["app"] == ("streams", "Empty")
        assert commit(wire, "app", "m1", epoch) == ErrorCode.unknown_member_id
        answer = wire.request(protocol.make(delete, groups_names=("app",)))
        assert answer.results[0].error_code == ErrorCode.none
        assert "app" not in list_groups(wire)
        assert fetch(wire, "app", None, -1) == (ErrorCode.none, -1)
