"""Replay of streams group records into ``CoordinatorShard.groups``: one replayer per record
type, named in ``coordinator.groups.replay``'s table; the shapes every modern group type shares
are replayed by ``modern.replay``, members, current assignments (tasks) and the topology here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from coordinator.groups.modern import replay as modern_replay
from storage.records import StreamsGroupMetadataValue, TaskIds, TaskIdsWithEpochs

from .model import (
    Endpoint,
    MemberState,
    StreamsGroup,
    StreamsGroupMember,
    TaskEpochs,
    Tasks,
    TasksTuple,
)
from .topology import Topology


def _tasks(ids: Iterable[TaskIds | TaskIdsWithEpochs]) -> Tasks:
    return {t.subtopology_id: frozenset(t.partitions) for t in ids if t.partitions}


def _epochs(ids: Iterable[TaskIdsWithEpochs], default: int) -> TaskEpochs:
    """Active tasks' assignment epochs; missing or mismatched ones default to the record's
    member epoch, as Kafka replays them."""
    out: dict[str, dict[int, int]] = {}
    for t in ids:
        epochs = t.assignment_epochs if len(t.assignment_epochs) == len(t.partitions) \
            else (default,) * len(t.partitions)
        out[t.subtopology_id] = dict(zip(t.partitions, epochs, strict=True))
    return out


def _group_metadata(group: StreamsGroup, value: StreamsGroupMetadataValue) -> None:
    group.group_epoch = value.epoch
    group.metadata_hash = value.metadata_hash
    group.validated_topology_epoch = value.validated_topology_epoch
    group.assignment_configs = tuple((kv.key, kv.value) for kv in value.assignment_configs)


def _member_metadata(group: StreamsGroup, key: Any, value: Any) -> None:
    if value is None:
        group.members.pop(key.member_id, None)
        return
    old = group.members.get(key.member_id) or StreamsGroupMember(key.member_id)
    endpoint = value.user_endpoint
    group.members[key.member_id] = replace(
        old, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
        client_host=value.client_host, rebalance_timeout_ms=value.rebalance_timeout_ms,
        topology_epoch=value.topology_epoch, process_id=value.process_id,
        user_endpoint=None if endpoint is None else Endpoint(endpoint.host, endpoint.port),
        client_tags=tuple((kv.key, kv.value) for kv in value.client_tags))


def _current_assignment(group: StreamsGroup, key: Any, value: Any) -> None:
    if value is None:
        return  # the member itself goes with its metadata tombstone
    old = group.members.get(key.member_id) or StreamsGroupMember(key.member_id)
    try:
        state = MemberState(value.state)
    except ValueError:
        state = MemberState.UNKNOWN
    epoch = value.member_epoch
    group.members[key.member_id] = replace(
        old, member_epoch=epoch, previous_member_epoch=value.previous_member_epoch,
        state=state,
        assigned=TasksTuple(_tasks(value.active_tasks), _tasks(value.standby_tasks),
                            _tasks(value.warmup_tasks), _epochs(value.active_tasks, epoch)),
        pending_revocation=TasksTuple(
            _tasks(value.active_tasks_pending_revocation),
            _tasks(value.standby_tasks_pending_revocation),
            _tasks(value.warmup_tasks_pending_revocation),
            _epochs(value.active_tasks_pending_revocation, epoch)))


def _topology(group: StreamsGroup, key: Any, value: Any) -> None:
    group.topology = None if value is None else Topology.from_record(value)
    group.configured = None
    group.metadata_expired = True


group_metadata = modern_replay.group_metadata(StreamsGroup, _group_metadata)
member_metadata = modern_replay.group_record(StreamsGroup, _member_metadata)
target_metadata = modern_replay.target_metadata(StreamsGroup, no_epoch=-1)
target_member = modern_replay.target_member(
    StreamsGroup, lambda group, key, value: TasksTuple(
        _tasks(value.active_tasks), _tasks(value.standby_tasks), _tasks(value.warmup_tasks)))
current_assignment = modern_replay.group_record(StreamsGroup, _current_assignment)
topology = modern_replay.group_record(StreamsGroup, _topology)
