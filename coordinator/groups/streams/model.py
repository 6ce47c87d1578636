"""The streams group (KIP-1071) and its members, as their records say (Kafka's ``StreamsGroup``
and ``StreamsGroupMember``). Only ``streams.replay`` changes these objects.

A task is (subtopology id, partition). A member holds tasks in three roles, active, standby
and warm-up (``TasksTuple``); its active tasks remember the assignment epoch each was given at
(``TaskEpochs``), which offset commits of an older member epoch are checked against.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from types import MappingProxyType
from typing import Any

from coordinator.groups.modern.members import ModernGroupMember
from coordinator.groups.modern.state import GroupState
from protocol import ErrorCode

STREAMS_PROTOCOL_TYPE = "streams"
"""The protocol type and group type of streams groups (ListGroups)."""

EMPTY_ASSIGNMENT_EPOCH = 1
"""KAFKA-19829 / seed 000: a new group's epoch 1 is the empty target assignment."""
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

Tasks = Mapping[str, frozenset[int]]
"""Task partitions by subtopology id."""
TaskEpochs = Mapping[str, Mapping[int, int]]
"""Active tasks: partition -> the assignment epoch it was given at, by subtopology id."""
NO_TASKS: Tasks = MappingProxyType({})
NO_EPOCHS: TaskEpochs = MappingProxyType({})


def task_count(tasks: Tasks) -> int:
    return sum(len(p) for p in tasks.values())


def iter_tasks(tasks: Tasks) -> Iterator[tuple[str, int]]:
    for subtopology, partitions in tasks.items():
        for partition in partitions:
            yield subtopology, partition


def tasks_of(pairs: Any) -> Tasks:
    """Tasks from (subtopology id, partition) pairs, empty subtopologies dropped."""
    out: dict[str, set[int]] = {}
    for subtopology, partition in pairs:
        out.setdefault(subtopology, set()).add(partition)
    return {s: frozenset(p) for s, p in out.items() if p}


def minus(tasks: Tasks, other: Tasks) -> Tasks:
    out = {s: p - other.get(s, frozenset()) for s, p in tasks.items()}
    return {s: p for s, p in out.items() if p}


def intersect(tasks: Tasks, other: Tasks) -> Tasks:
    out = {s: p & other.get(s, frozenset()) for s, p in tasks.items()}
    return {s: p for s, p in out.items() if p}


def union(tasks: Tasks, other: Tasks) -> Tasks:
    out = {s: set(p) for s, p in tasks.items()}
    for s, p in other.items():
        out.setdefault(s, set()).update(p)
    return {s: frozenset(p) for s, p in out.items() if p}


def overlaps(tasks: Tasks, other: Tasks) -> bool:
    return any(p & other.get(s, frozenset()) for s, p in tasks.items())


@dataclass(frozen=True, slots=True)
class TasksTuple:
    """Tasks by role (Kafka's ``TasksTuple``); ``epochs`` holds the active tasks' assignment
    epochs where they are known (current assignments; targets have none)."""

    # default_factory: a mappingproxy is unhashable, which dataclasses take for mutable.
    active: Tasks = field(default_factory=lambda: NO_TASKS)
    standby: Tasks = field(default_factory=lambda: NO_TASKS)
    warmup: Tasks = field(default_factory=lambda: NO_TASKS)
    epochs: TaskEpochs = field(default_factory=lambda: NO_EPOCHS)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def same_tasks(self, other: TasksTuple) -> bool:
        return (self.active == other.active and self.standby == other.standby
                and self.warmup == other.warmup)

    def epoch_of(self, subtopology: str, partition: int, default: int) -> int:
        return self.epochs.get(subtopology, {}).get(partition, default)


EMPTY_TASKS = TasksTuple()


class MemberState(IntEnum):
    """Kafka's streams ``MemberState`` byte (in the current assignment record)."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class StreamsGroupMember(ModernGroupMember):
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: Endpoint | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    assigned: TasksTuple = EMPTY_TASKS
    pending_revocation: TasksTuple = EMPTY_TASKS

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def metadata(self) -> tuple[Any, ...]:
        """What the member metadata record holds (a change writes one and bumps the epoch)."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host,
                self.rebalance_timeout_ms, self.topology_epoch, self.process_id,
                self.user_endpoint, self.client_tags)


@dataclass(eq=False)
class StreamsGroup:
    group_id: str
    group_epoch: int = 1
    """A new group starts at epoch 1 (its first member bumps it to 2), as Kafka's does."""
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    assignment_configs: tuple[tuple[str, str], ...] = ()
    """``LastAssignmentConfigs``: the assignor configs of the last target (num.standby.replicas)."""
    assignment_epoch: int = EMPTY_ASSIGNMENT_EPOCH
    assignment_timestamp: int = 0
    members: dict[str, StreamsGroupMember] = field(default_factory=dict)
    target: dict[str, TasksTuple] = field(default_factory=dict)
    held: dict[str, Any] = field(default_factory=dict)
    """Member id -> ``modern.deferred.Hold`` of (subtopology, partition) active tasks held by
    deferred resolution (StreamsGroupHeldTasks records, ``streams.imbalance``)."""
    topology: Any = None
    """The stored topology (``topology.Topology``), None until the first member sent one."""
    # --- in memory only ----------------------------------------------------------------------
    configured: Any = None
    """The topology configured against the current metadata (``topology.ConfiguredTopology``);
    recomputed when the metadata changes, never persisted."""
    metadata_expired: bool = True
    """A topic the group needs changed: the next heartbeat configures the topology again."""
    endpoint_epoch: int = 0
    """``EndpointInformationEpoch``: bumped when a member with an endpoint gets new tasks."""
    shutdown_requested_by: str | None = None
    """The first member that asked for SHUTDOWN_APPLICATION (until the group is empty)."""
    assignor_run: int | None = None
    """The offloaded assignor run in flight (seed 000)."""

    group_type = STREAMS_PROTOCOL_TYPE
    protocol_type = STREAMS_PROTOCOL_TYPE

    def validate_offset_commit(self, commit: Any) -> ErrorCode | None:
        return validate_offset_commit(self, commit)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int
                              ) -> ErrorCode | None:
        return validate_offset_fetch(self, member_id, member_epoch)

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            return GroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return GroupState.RECONCILING
        return GroupState.STABLE

    def member(self, member_id: str) -> StreamsGroupMember | None:
        return self.members.get(member_id)

    def target_of(self, member_id: str) -> TasksTuple:
        return self.target.get(member_id, EMPTY_TASKS)

    # --- who holds what, now (assigned and pending revocation) -------------------------------
    def active_owner_process(self, subtopology: str, partition: int,
                             exclude: str | None = None) -> str | None:
        """The process holding the task active (assigned or pending revocation), if any."""
        for m in self.members.values():
            if m.member_id == exclude:
                continue
            for tasks in (m.assigned.active, m.pending_revocation.active):
                if partition in tasks.get(subtopology, ()):
                    return m.process_id
        return None

    def processes_holding(self, subtopology: str, partition: int,
                          exclude: str | None = None) -> set[str]:
        """Processes holding the task in any role (assigned or pending revocation)."""
        out = set()
        for m in self.members.values():
            if m.member_id == exclude:
                continue
            for held in (m.assigned, m.pending_revocation):
                if any(partition in tasks.get(subtopology, ())
                       for tasks in (held.active, held.standby, held.warmup)):
                    out.add(m.process_id)
        return out


def validate_offset_commit(group: StreamsGroup, commit: Any) -> ErrorCode | None:
    """Kafka's ``StreamsGroup.validateOffsetCommit`` (``commit`` is an ``offsets.OffsetCommit``):
    without an epoch only an empty group takes commits; otherwise the member must exist, use
    OffsetCommit v9+, and commit at its epoch, or at an older one for tasks it still holds
    active that were assigned no later than that epoch (else STALE_MEMBER_EPOCH for the whole
    request)."""
    if commit.generation_id < 0 and not group.members:
        return None
    member = group.members.get(commit.member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    if commit.api_version < 9:
        return ErrorCode.unsupported_version
    if commit.generation_id == member.member_epoch:
        return None
    if commit.generation_id > member.member_epoch or group.topology is None:
        return ErrorCode.stale_member_epoch
    owners = group.topology.source_topic_map()
    for partition in commit.partitions:
        subtopology = owners.get(partition.topic)
        if subtopology is None:
            return ErrorCode.stale_member_epoch
        task = partition.partition
        held = [tasks for tasks in (member.assigned, member.pending_revocation)
                if task in tasks.active.get(subtopology, ())]
        if not held:
            return ErrorCode.stale_member_epoch
        if commit.generation_id < held[0].epoch_of(subtopology, task, member.member_epoch):
            return ErrorCode.stale_member_epoch
    return None


def validate_offset_fetch(group: StreamsGroup, member_id: str | None, member_epoch: int
                          ) -> ErrorCode | None:
    """Kafka's ``StreamsGroup.validateOffsetFetch``: no member id and no epoch always reads;
    otherwise the member must exist at that epoch."""
    if member_id is None and member_epoch < 0:
        return None
    if member_epoch == -1 and not member_id:
        return None
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.unknown_member_id
    if member_epoch != member.member_epoch:
        return ErrorCode.stale_member_epoch
    return None
