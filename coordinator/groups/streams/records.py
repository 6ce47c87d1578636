"""Streams group records from model values (Kafka's ``StreamsCoordinatorRecordHelpers``): group
metadata, members, the topology, target and current assignments, and their tombstones."""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.runtime.result import Record
from storage.records import (
    Endpoint,
    KeyValue,
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupHeldTasksKey,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataKey,
    StreamsGroupMetadataValue,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTopologyKey,
    TaskIds,
    TaskIdsWithEpochs,
)

from .model import StreamsGroup, StreamsGroupMember, TaskEpochs, Tasks, TasksTuple
from .topology import Topology


def task_ids(tasks: Tasks) -> tuple[TaskIds, ...]:
    return tuple(TaskIds(subtopology_id=s, partitions=tuple(sorted(tasks[s])))
                 for s in sorted(tasks) if tasks[s])


def task_ids_with_epochs(tasks: Tasks, epochs: TaskEpochs | None = None
                         ) -> tuple[TaskIdsWithEpochs, ...]:
    out = []
    for s in sorted(tasks):
        partitions = tuple(sorted(tasks[s]))
        if not partitions:
            continue
        by_partition = (epochs or {}).get(s, {})
        out.append(TaskIdsWithEpochs(
            subtopology_id=s, partitions=partitions,
            assignment_epochs=tuple(by_partition.get(p, -1) for p in partitions)
            if epochs is not None else ()))
    return tuple(out)


def group_metadata(group: StreamsGroup, epoch: int, metadata_hash: int,
                   validated_topology_epoch: int,
                   assignment_configs: tuple[tuple[str, str], ...]) -> Record:
    return (StreamsGroupMetadataKey(group_id=group.group_id), StreamsGroupMetadataValue(
        epoch=epoch, metadata_hash=metadata_hash,
        validated_topology_epoch=validated_topology_epoch,
        assignment_configs=tuple(KeyValue(key=k, value=v) for k, v in assignment_configs)))


def member_metadata(group_id: str, member: StreamsGroupMember) -> Record:
    endpoint = member.user_endpoint
    return (StreamsGroupMemberMetadataKey(group_id=group_id, member_id=member.member_id),
            StreamsGroupMemberMetadataValue(
                instance_id=member.instance_id, rack_id=member.rack_id,
                client_id=member.client_id, client_host=member.client_host,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                topology_epoch=member.topology_epoch, process_id=member.process_id,
                user_endpoint=None if endpoint is None
                else Endpoint(host=endpoint.host, port=endpoint.port),
                client_tags=tuple(KeyValue(key=k, value=v)
                                  for k, v in sorted(member.client_tags))))


def topology(group_id: str, value: Topology) -> Record:
    return (StreamsGroupTopologyKey(group_id=group_id), value.to_record())


def target_member(group_id: str, member_id: str, tasks: TasksTuple) -> Record:
    return (StreamsGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
            StreamsGroupTargetAssignmentMemberValue(
                active_tasks=task_ids(tasks.active), standby_tasks=task_ids(tasks.standby),
                warmup_tasks=task_ids(tasks.warmup)))


def target_metadata(group_id: str, epoch: int, timestamp: int) -> Record:
    return (StreamsGroupTargetAssignmentMetadataKey(group_id=group_id),
            StreamsGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                      timestamp=timestamp))


def current_assignment(group_id: str, member: StreamsGroupMember) -> Record:
    assigned, pending = member.assigned, member.pending_revocation
    return (StreamsGroupCurrentMemberAssignmentKey(group_id=group_id,
                                                   member_id=member.member_id),
            StreamsGroupCurrentMemberAssignmentValue(
                member_epoch=member.member_epoch,
                previous_member_epoch=member.previous_member_epoch,
                state=int(member.state),
                active_tasks=task_ids_with_epochs(assigned.active, assigned.epochs),
                standby_tasks=task_ids_with_epochs(assigned.standby),
                warmup_tasks=task_ids_with_epochs(assigned.warmup),
                active_tasks_pending_revocation=task_ids_with_epochs(pending.active,
                                                                     pending.epochs),
                standby_tasks_pending_revocation=task_ids_with_epochs(pending.standby),
                warmup_tasks_pending_revocation=task_ids_with_epochs(pending.warmup)))


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """A member's records, removed (Kafka's order: current, target, metadata)."""
    return [
        (StreamsGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None),
        (StreamsGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None),
        (StreamsGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None),
    ]


def group_tombstones(group: StreamsGroup, member_ids: Iterable[str] | None = None
                     ) -> list[Record]:
    """Every record of the group, removed (Kafka's ``StreamsGroup.createGroupTombstoneRecords``
    order)."""
    gid = group.group_id
    members = list(group.members if member_ids is None else member_ids)
    out: list[Record] = [
        (StreamsGroupCurrentMemberAssignmentKey(group_id=gid, member_id=m), None)
        for m in members]
    out += [(StreamsGroupTargetAssignmentMemberKey(group_id=gid, member_id=m), None)
            for m in sorted(set(members) | set(group.target))]
    out.append((StreamsGroupTargetAssignmentMetadataKey(group_id=gid), None))
    out += [(StreamsGroupMemberMetadataKey(group_id=gid, member_id=m), None) for m in members]
    out += [(StreamsGroupHeldTasksKey(group_id=gid, member_id=m), None) for m in group.held]
    out.append((StreamsGroupMetadataKey(group_id=gid), None))
    out.append((StreamsGroupTopologyKey(group_id=gid), None))
    return out
