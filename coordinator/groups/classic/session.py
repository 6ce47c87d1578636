"""Classic group handlers after the join: SyncGroup, Heartbeat, LeaveGroup, offset-commit
validation, and the replay of GroupMetadata records."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from coordinator.groups.common.shard import CoordinatorShard
from coordinator.observability import timeline
from coordinator.observability.logs import get_logger
from coordinator.runtime import Pending, Result
from protocol import ErrorCode
from storage.records import GroupMetadataKey, GroupMetadataValue

from .join import (
    Completing,
    Dead,
    Empty,
    Preparing,
    Stable,
    SyncOutcome,
    SyncRequest,
    _arm_session,
    _group,
    _remove_member,
    _Step,
    sync_key,
    validate_existing_member,
)
from .model import UNKNOWN_MEMBER_ID, ClassicGroup

log = get_logger("coordinator.groups.classic")


# --- SyncGroup ----------------------------------------------------------------------------------
def sync(shard: Any, request: SyncRequest, now: int) -> Result:
    group = _group(shard, request.group_id)
    if not request.group_id:
        return Result((), SyncOutcome(ErrorCode.invalid_group_id))
    if group is None or group.state in (Empty, Dead):
        return Result((), SyncOutcome(ErrorCode.unknown_member_id))
    error = validate_existing_member(group, request.member_id, request.group_instance_id)
    if error is not None:
        return Result((), SyncOutcome(error))
    member = group.members[request.member_id]
    if request.generation_id != group.generation_id:
        return Result((), SyncOutcome(ErrorCode.illegal_generation))
    if (request.protocol_type is not None and request.protocol_type != group.protocol_type) or (
            request.protocol_name is not None and request.protocol_name != group.protocol_name):
        return Result((), SyncOutcome(ErrorCode.inconsistent_group_protocol))
    if group.state is Preparing:
        return Result((), SyncOutcome(ErrorCode.rebalance_in_progress))
    step = _Step(group.copy())
    _arm_session(step, member, now)
    if group.state is Stable:
        return step.result(shard, _assigned(group, member.assignment))
    # CompletingRebalance: wait for the leader's assignment.
    step.group.members[member.member_id] = replace(member, awaiting_sync=True)
    if group.is_leader(member.member_id):
        _install_assignment(step, dict(request.assignments), now)
        for done_key, outcome in list(step.completions):
            if done_key == sync_key(group.group_id, member.member_id):
                step.completions.remove((done_key, outcome))
                return step.result(shard, outcome)
    return step.result(shard, Pending(sync_key(group.group_id, member.member_id)))


def _assigned(group: ClassicGroup, assignment: bytes) -> SyncOutcome:
    return SyncOutcome(ErrorCode.none, assignment, group.protocol_type, group.protocol_name)


def _install_assignment(step: _Step, assignments: dict[str, bytes], now: int) -> None:
    """The leader's assignment: stored durably, then every waiting member gets its part."""
    group = step.group
    for member_id, member in list(group.members.items()):
        group.members[member_id] = replace(member, assignment=assignments.get(member_id, b""),
                                           awaiting_sync=False)
    group.transition(Stable, now)
    step.records.append(group.record())
    step.timers.append((("classic-sync", group.group_id),))
    for member_id, member in group.members.items():
        step.completions.append((sync_key(group.group_id, member_id),
                                 _assigned(group, member.assignment)))
    log.info("group stable", group_id=group.group_id, generation=group.generation_id,
             members=len(group.members))


# --- Heartbeat ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


def heartbeat(shard: Any, request: HeartbeatRequest, now: int) -> Result:
    group = _group(shard, request.group_id)
    if group is None:
        return Result((), ErrorCode.unknown_member_id)
    if group.state is Dead:
        return Result((), ErrorCode.coordinator_not_available)
    if group.state is Empty:
        return Result((), ErrorCode.unknown_member_id)
    error = validate_existing_member(group, request.member_id, request.group_instance_id)
    if error is not None:
        return Result((), error)
    member = group.members[request.member_id]
    if request.generation_id != group.generation_id:
        return Result((), ErrorCode.illegal_generation)
    step = _Step(group)  # nothing about the group changes, only its member's session timer
    _arm_session(step, member, now)
    error = ErrorCode.rebalance_in_progress if group.state is Preparing else ErrorCode.none
    return step.result(shard, error)


# --- LeaveGroup ---------------------------------------------------------------------------------
def leave(shard: Any, group_id: str, members: list[tuple[str, str | None, str | None]],
          now: int) -> Result:
    """``members`` are (member id, group instance id, reason); the response is the error of
    each, in order."""
    group = _group(shard, group_id)
    if group is None:
        return Result((), [ErrorCode.unknown_member_id] * len(members))
    step = _Step(group.copy())
    errors = []
    for member_id, instance_id, reason in members:
        target = step.group.members.get(member_id) if member_id != UNKNOWN_MEMBER_ID else None
        if instance_id is not None:
            static = step.group.static_member(instance_id)
            if static is None:
                errors.append(ErrorCode.unknown_member_id)
                continue
            if member_id != UNKNOWN_MEMBER_ID and static.member_id != member_id:
                errors.append(ErrorCode.fenced_instance_id)
                continue
            target = static
        if target is None:
            if member_id in step.group.pending_members:
                step.group.pending_members.discard(member_id)
                errors.append(ErrorCode.none)
                continue
            errors.append(ErrorCode.unknown_member_id)
            continue
        log.info("member left", group_id=group_id, member_id=target.member_id,
                 reason=reason or "")
        timeline.note_removed(group_id, target.member_id, timeline.LEFT, now)
        _remove_member(step, target.member_id, now, reason or f"{target.member_id} left")
        errors.append(ErrorCode.none)
    return step.result(shard, errors)


# --- offset commits -----------------------------------------------------------------------------
def validate_offset_commit(group: ClassicGroup, member_id: str, instance_id: str | None,
                           generation_id: int) -> ErrorCode | None:
    """Kafka's ClassicGroup.validateOffsetCommit: None when the commit is allowed."""
    if group.state is Dead:
        return ErrorCode.coordinator_not_available
    if generation_id < 0 and group.state is Empty:
        return None  # a simple (admin or manually assigning) consumer
    if generation_id >= 0 or member_id or instance_id is not None:
        member = group.members.get(member_id)
        if instance_id is not None:
            static = group.static_member(instance_id)
            if static is None:
                return ErrorCode.unknown_member_id
            if static.member_id != member_id:
                return ErrorCode.fenced_instance_id
        elif member is None:
            return ErrorCode.unknown_member_id
        if generation_id != group.generation_id:
            return ErrorCode.illegal_generation
    elif group.state is not Empty:
        return ErrorCode.unknown_member_id
    if group.state is Completing:
        return ErrorCode.rebalance_in_progress
    return None


# --- replay and load ----------------------------------------------------------------------------
def replay_group_metadata(shard: CoordinatorShard, offset: int, key: GroupMetadataKey,
                           value: GroupMetadataValue | None) -> None:
    if value is None:
        shard.groups.pop(key.group, None)
        return
    shard.groups[key.group] = ClassicGroup.from_record(key.group, value)


def arm_loaded_sessions(shard: CoordinatorShard, now: int) -> None:
    """Members loaded from the log must heartbeat again within their session timeout."""
    for group in list(shard.groups.values()):
        if isinstance(group, ClassicGroup):
            step = _Step(group)
            for member in group.members.values():
                _arm_session(step, member, now)
            effect = step.result(shard, None).effect
            assert effect is not None  # _Step.result always gives one
            effect()

