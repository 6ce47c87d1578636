"""ConsumerGroupPrepareAssignment and ConsumerGroupInstallAssignment (the KIP-848 draft, seed
003): the pure handlers the chosen member of a client-side computation (``client_selection``)
reads the group state with and installs its target with.

Both check, in the draft's order: the group exists (GROUP_ID_NOT_FOUND), the member exists
(UNKNOWN_MEMBER_ID), its epoch is the member's (STALE_MEMBER_EPOCH), and it is the member
chosen to compute the target (UNKNOWN_MEMBER_ID, as the draft says, with a message saying
so). Prepare answers the group state: the group epoch, the assignor, every member (its
subscribed topic ids, regex matches included, its metadata for the assignor and its current
target) and the subscribed topics with their names and partition counts. Install then
validates the assignment "based on the information used to compute it":

* ``GroupEpoch`` must be the epoch of the state Prepare last handed out; an older one (a state
  a newer target or a newer Prepare superseded: a stale installation) is refused with
  STALE_MEMBER_EPOCH, one never handed out with INVALID_ASSIGNMENT;
* INVALID_ASSIGNMENT (``protocol.client_assignors.INVALID_ASSIGNMENT``, a code Kafka does not
  have) for a member that was not in that state, a member twice, a topic not in it, a
  partition out of range or assigned twice, or a partition of a topic its member does not
  subscribe to.

A valid assignment is installed as Kafka's target assignment records at ``GroupEpoch`` (members
that left since are dropped, members it leaves out get nothing), with the
ConsumerGroupClientAssignment record saying who computed it and the assignor's ``Error``; the
computation ends. If the group moved on meanwhile, its assign timer starts the next one.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coordinator.groups.modern.members import group_of, known_member
from coordinator.observability import sensors
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result
from coordinator.runtime.result import Record
from protocol import ErrorCode
from protocol.client_assignors import INVALID_ASSIGNMENT

from . import client_selection, pacing, records
from . import regex as consumer_regex
from .env import ConsumerGroupEnv
from .model import Assignment, ConsumerGroup, ConsumerGroupMember, SubscribedTopic
from .offload import arm_assign_timer
from .settings import group_settings
from .target import subscribed_ids

log = get_logger("coordinator.groups.consumer")


@dataclass(frozen=True, slots=True)
class MemberState:
    member: ConsumerGroupMember
    subscribed_topic_ids: frozenset[uuid.UUID]
    assignor: client_selection.ClientAssignor | None
    """Its metadata for the selected assignor (None: it lists none)."""
    target: Assignment


@dataclass(frozen=True, slots=True)
class GroupState:
    """What ConsumerGroupPrepareAssignment answers."""

    group_epoch: int
    assignor: str
    members: Sequence[MemberState]
    topics: Sequence[SubscribedTopic]


@dataclass(frozen=True, slots=True)
class InstallRequest:
    group_id: str
    member_id: str
    member_epoch: int
    group_epoch: int
    error: int
    members: Sequence[tuple[str, Sequence[tuple[uuid.UUID, Sequence[int]]]]]
    """(member id, (topic id, partitions)...) per member, as sent."""


@dataclass(frozen=True, slots=True)
class InstallResponse:
    error_code: int = 0
    error_message: str | None = None


def _chosen(shard: Any, group_id: str, member_id: str, member_epoch: int
            ) -> tuple[ConsumerGroup, ConsumerGroupMember, client_selection.ClientComputation]:
    """Steps 1-4 of both handlers (they raise the draft's errors)."""
    group = group_of(shard, group_id, ConsumerGroup, "consumer")
    member: ConsumerGroupMember = known_member(group, member_id)
    if member_epoch != member.member_epoch:
        raise CoordinatorError(
            ErrorCode.stale_member_epoch,
            f"The member epoch {member_epoch} of member {member_id} is stale: it is "
            f"{member.member_epoch}.")
    computation = group.client_computation
    if computation is None or computation.member_id != member_id:
        raise CoordinatorError(
            ErrorCode.unknown_member_id,
            f"Member {member_id} is not the member chosen to compute the assignment of group "
            f"{group_id}.")
    return group, member, computation


def _member_topics(group: ConsumerGroup) -> dict[str, frozenset[uuid.UUID]]:
    resolution = consumer_regex.resolved_topics(group)
    return {mid: subscribed_ids(consumer_regex.with_regex_topics(m, resolution),
                                group.subscription_metadata)
            for mid, m in group.members.items()}


def prepare(shard: Any, now_ms: int, group_id: str, member_id: str,
            member_epoch: int) -> Result:
    """ConsumerGroupPrepareAssignment: the group state (``GroupState``), no records; the
    computation notes which state it handed out."""
    group, _, computation = _chosen(shard, group_id, member_id, member_epoch)
    topics = _member_topics(group)
    members = [
        MemberState(m, topics[mid],
                    next((a for a in group.client_assignors.get(mid, ())
                          if a.name == computation.assignor), None),
                    group.target_of(mid))
        for mid, m in sorted(group.members.items())]
    computation.prepared_epoch = group.group_epoch  # in memory, not a record
    computation.prepared_members = frozenset(group.members)
    return Result((), GroupState(group.group_epoch, computation.assignor, members,
                                 sorted(group.subscription_metadata.values(),
                                        key=lambda t: t.name)))


def _invalid(message: str) -> Result:
    return Result((), InstallResponse(INVALID_ASSIGNMENT, message))


def _validated(group: ConsumerGroup, computation: client_selection.ClientComputation,
               request: InstallRequest) -> dict[str, Assignment] | str:
    """The assignment by member, or why it is invalid."""
    by_id = {t.topic_id: t for t in group.subscription_metadata.values()}
    topics = _member_topics(group)
    owners: set[tuple[uuid.UUID, int]] = set()
    out: dict[str, Assignment] = {}
    for mid, assigned in request.members:
        if mid not in computation.prepared_members:
            return f"Member {mid} was not in the group state the assignment was computed from."
        if mid in out:
            return f"Member {mid} is assigned twice."
        assignment: dict[uuid.UUID, frozenset[int]] = {}
        for topic_id, partitions in assigned:
            topic = by_id.get(topic_id)
            if topic is None:
                return f"Topic {topic_id} is not subscribed to by the group."
            if mid in topics and topic_id not in topics[mid]:
                return f"Member {mid} does not subscribe to topic {topic.name}."
            for p in partitions:
                if not 0 <= p < topic.partitions:
                    return f"Partition {topic.name}-{p} does not exist."
                if (topic_id, p) in owners:
                    return f"Partition {topic.name}-{p} is assigned more than once."
                owners.add((topic_id, p))
            if partitions:
                assignment[topic_id] = assignment.get(topic_id, frozenset()) | frozenset(
                    partitions)
        out[mid] = assignment
    return out


def install(shard: Any, now_ms: int, env: ConsumerGroupEnv, request: InstallRequest) -> Result:
    """ConsumerGroupInstallAssignment: the target records, or the error (``InstallResponse``)."""
    group, _, computation = _chosen(shard, request.group_id, request.member_id,
                                    request.member_epoch)
    gid = group.group_id
    prepared = computation.prepared_epoch
    if request.group_epoch <= group.assignment_epoch or (
            prepared is not None and request.group_epoch < prepared):
        return Result((), InstallResponse(
            ErrorCode.stale_member_epoch,
            f"GroupEpoch {request.group_epoch} is stale: the group's target is at epoch "
            f"{group.assignment_epoch}, its latest state handed out at {prepared}."))
    if request.group_epoch != prepared:
        return _invalid(f"GroupEpoch {request.group_epoch} is not the epoch of a group state "
                        "handed out by ConsumerGroupPrepareAssignment.")
    assignment = _validated(group, computation, request)
    if isinstance(assignment, str):
        log.warning("client-side assignment refused", group_id=gid, member_id=request.member_id,
                    reason=assignment)
        return _invalid(assignment)
    out = _target_records(group, assignment)
    out.append(records.target_metadata(gid, request.group_epoch, now_ms))
    out.append(client_selection.assignment_record(gid, request.group_epoch,
                                                  computation.assignor, request.member_id,
                                                  request.error))
    sensors.record_assignment(gid, computation.assignor, 0.0,
                              sensors.partitions_moved(group.target, {
                                  mid: assignment.get(mid, {}) for mid in group.members}),
                              epoch=request.group_epoch)
    log.info("installed client-side target assignment", group_id=gid,
             assignment_epoch=request.group_epoch, assignor=computation.assignor,
             member_id=request.member_id, error=request.error)
    client_selection.end(group)  # in memory: the run in flight is over
    if group.group_epoch > request.group_epoch:  # the group moved on: the next computation
        own = group_settings(shard, env, gid)
        arm_assign_timer(shard, env, gid,
                         pacing.next_run_at(group, now_ms, own.assignment_interval_ms))
    return Result(out, InstallResponse())


def _target_records(group: ConsumerGroup, assignment: Mapping[str, Assignment]) -> list[Record]:
    out = []
    for mid in group.members:  # members that left meanwhile are dropped
        new = assignment.get(mid, {})
        if group.target.get(mid, {}) != new or mid not in group.target:
            out.append(records.target_member(group.group_id, mid, new, group.assignment_forms))
    return out
