"""A protocol-level Kafka Streams member for the scenario: raw StreamsGroupHeartbeat v0 requests
(KIP-1071) over its own connection, as no Python client speaks the protocol. A member owns at
once whatever tasks it is given and reports them on every heartbeat, so each rebalance settles in
a round or two of heartbeats; StreamsGroupDescribe v0 tells when it has."""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass, field
from typing import Any

from kio.schema.streams_group_describe.v0.request import StreamsGroupDescribeRequest
from kio.schema.streams_group_heartbeat.v0.request import (
    StreamsGroupHeartbeatRequest,
    Subtopology,
    TaskIds,
    TopicInfo,
    Topology,
)

import protocol
from tests.integration.conftest import WireClient

LEAVE_GROUP_EPOCH = -1


def topology(app: str, source: str) -> Topology:
    """Two subtopologies: "0" reads ``source`` and writes a repartition topic (stateless); "1"
    reads it into a store with a changelog (stateful: its tasks get standby replicas). The
    coordinator creates both internal topics."""
    repartition = f"{app}-repartition"

    def internal(name: str) -> TopicInfo:
        return protocol.make(TopicInfo, name=name, partitions=0, replication_factor=0,
                             topic_configs=())

    def subtopology(subtopology_id: str, **fields: Any) -> Subtopology:
        return protocol.make(Subtopology, subtopology_id=subtopology_id, source_topic_regex=(),
                             copartition_groups=(), **fields)

    return protocol.make(Topology, epoch=1, subtopologies=(
        subtopology("0", source_topics=(source,), state_changelog_topics=(),
                    repartition_sink_topics=(repartition,), repartition_source_topics=()),
        subtopology("1", source_topics=(), state_changelog_topics=(
            internal(f"{app}-store-changelog"),), repartition_sink_topics=(),
            repartition_source_topics=(internal(repartition),)),
    ))


@dataclass
class StreamsMember:
    """One Streams instance (its own process id) in ``group_id``."""

    bootstrap: str
    group_id: str
    topology: Topology
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    process_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    epoch: int = 0
    endpoint_epoch: int = -1
    active: tuple[TaskIds, ...] = ()
    standby: tuple[TaskIds, ...] = ()

    def __post_init__(self) -> None:
        self.wire = WireClient(self.bootstrap)

    def heartbeat(self) -> Any:
        # joining: the topology, the rebalance timeout and the process id; then the tasks the
        # member owns, on every heartbeat
        joining: dict[str, Any] = {} if self.epoch else {
            "topology": self.topology, "rebalance_timeout": datetime.timedelta(seconds=30),
            "process_id": self.process_id}
        request = protocol.make(
            StreamsGroupHeartbeatRequest, group_id=self.group_id, member_id=self.member_id,
            member_epoch=self.epoch, endpoint_information_epoch=self.endpoint_epoch,
            active_tasks=self.active, standby_tasks=self.standby, warmup_tasks=(),
            client_tags=None, task_offsets=None, task_end_offsets=None, **joining)
        response = self.wire.request(request)
        assert response.error_code == 0, response
        self.epoch = response.member_epoch
        self.endpoint_epoch = response.endpoint_information_epoch
        if response.active_tasks is not None:  # new tasks: owned at once
            self.active = response.active_tasks
            self.standby = response.standby_tasks or ()
        return response

    def leave(self) -> None:
        request = protocol.make(
            StreamsGroupHeartbeatRequest, group_id=self.group_id, member_id=self.member_id,
            member_epoch=LEAVE_GROUP_EPOCH, endpoint_information_epoch=self.endpoint_epoch,
            active_tasks=None, standby_tasks=None, warmup_tasks=None, client_tags=None,
            task_offsets=None, task_end_offsets=None)
        try:
            response = self.wire.request(request)
            assert response.error_code == 0, response
        finally:
            self.wire.close()


def describe(bootstrap: str, group_id: str) -> Any:
    """StreamsGroupDescribe v0 of one group."""
    request = protocol.make(StreamsGroupDescribeRequest, group_ids=(group_id,),
                            include_authorized_operations=False)
    with WireClient(bootstrap) as wire:
        (group,) = wire.request(request).groups
    return group


def task_count(tasks: tuple[Any, ...]) -> int:
    return sum(len(t.partitions) for t in tasks)


def settled(bootstrap: str, group_id: str, members: list[StreamsMember], tasks: int,
            standby: int) -> int | None:
    """Heartbeat every member once; the group epoch if the group is then Stable: a target of
    the current group epoch, every member reconciled to it, ``tasks`` active tasks and
    ``standby`` standby tasks assigned, every member with some active task."""
    for member in members:
        member.heartbeat()
    group = describe(bootstrap, group_id)
    if (group.error_code != 0 or group.group_state != "Stable"
            or len(group.members) != len(members)
            or group.assignment_epoch != group.group_epoch):
        return None
    current = [m.assignment for m in group.members]
    if any(m.member_epoch != group.group_epoch or m.assignment != m.target_assignment
           for m in group.members):
        return None
    if not all(a.active_tasks for a in current):
        return None
    if (sum(task_count(a.active_tasks) for a in current) != tasks
            or sum(task_count(a.standby_tasks) for a in current) != standby):
        return None
    return int(group.group_epoch)
