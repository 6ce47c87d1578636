"""Classic group handlers: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their timers.

Pure in Kafka's sense: ``handler(shard, request, now) -> Result``. The next group is built from a
copy and installed by the result's ``effect`` once its records are written; answers that wait
for the rebalance are ``Pending`` keys completed by later events. Behaviour follows Kafka's
``GroupMetadataManager`` for classic groups (KIP-345 static members, KIP-394 MEMBER_ID_REQUIRED,
KIP-814 skip assignment).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from coordinator.groups.common.configs import ClassicConfig
from coordinator.observability import timeline
from coordinator.observability.logs import get_logger
from coordinator.runtime import Pending, Result
from protocol import ErrorCode

from .model import UNKNOWN_MEMBER_ID, ClassicGroup, ClassicGroupState, ClassicMember, new_member_id

log = get_logger("coordinator.groups.classic")

Empty, Preparing, Completing, Stable, Dead = (
    ClassicGroupState.EMPTY, ClassicGroupState.PREPARING_REBALANCE,
    ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.STABLE, ClassicGroupState.DEAD)


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    client_id: str
    client_host: str
    require_known_member_id: bool  # JoinGroup v4+ (KIP-394)
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class JoinOutcome:
    error: ErrorCode
    member_id: str = UNKNOWN_MEMBER_ID
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: tuple[tuple[str, str | None, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class SyncRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class SyncOutcome:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


def join_key(group_id: str, member_id: str) -> Hashable:
    return ("join", group_id, member_id)


def sync_key(group_id: str, member_id: str) -> Hashable:
    return ("sync", group_id, member_id)


@dataclass(slots=True)
class _Step:
    """What one handler decides: the next group, records, answers and timer changes."""

    group: ClassicGroup
    records: list[Any] = field(default_factory=list)
    completions: list[tuple[Hashable, Any]] = field(default_factory=list)
    timers: list[tuple[Hashable, int, Callable[..., Result]] | tuple[Hashable]] = field(
        default_factory=list)
    remove_group: bool = False
    initial_delay_ms: int = 0  # group.initial.rebalance.delay.ms, for a new group's first join

    def result(self, shard: Any, response: Any) -> Result:
        group, timers, remove = self.group, self.timers, self.remove_group

        def effect() -> None:
            if remove:
                shard.groups.pop(group.group_id, None)
            else:
                shard.groups[group.group_id] = group
            for timer in timers:
                if len(timer) == 1:
                    shard.timers.cancel(timer[0])
                else:
                    key, deadline, action = timer
                    shard.timers.schedule(key, deadline, action)

        return Result(tuple(self.records), response, tuple(self.completions), effect)


def validate_existing_member(group: ClassicGroup, member_id: str,
                             instance_id: str | None) -> ErrorCode | None:
    """Kafka's validateExistingMember: a static member is known by its instance id, so the
    zombie of a replaced instance is fenced rather than told it is unknown."""
    if instance_id is None:
        return None if member_id in group.members else ErrorCode.unknown_member_id
    static = group.static_member(instance_id)
    if static is None:
        return ErrorCode.unknown_member_id
    if static.member_id != member_id:
        return ErrorCode.fenced_instance_id
    return None


def _group(shard: Any, group_id: str) -> ClassicGroup | None:
    group = shard.groups.get(group_id)
    return group if isinstance(group, ClassicGroup) else None


# --- timers ------------------------------------------------------------------------------------
def _session_key(group_id: str, member_id: str) -> Hashable:
    return ("classic-session", group_id, member_id)


def _join_key(group_id: str) -> Hashable:
    return ("classic-join", group_id)


def _sync_timer_key(group_id: str) -> Hashable:
    return ("classic-sync", group_id)


def _arm_session(step: _Step, member: ClassicMember, now: int) -> None:
    gid = step.group.group_id
    step.timers.append((_session_key(gid, member.member_id), now + member.session_timeout_ms,
                        lambda shard, t, m=member.member_id: session_expired(shard, gid, m, t)))


def _disarm_session(step: _Step, member_id: str) -> None:
    step.timers.append((_session_key(step.group.group_id, member_id),))


def session_expired(shard: Any, group_id: str, member_id: str, now: int) -> Result:
    group = _group(shard, group_id)
    if group is None:
        return Result()
    step = _Step(group.copy())
    if member_id in step.group.pending_members:
        step.group.pending_members.discard(member_id)
        log.info("pending member expired", group_id=group_id, member_id=member_id)
        _maybe_complete_join(step, now)
        return step.result(shard, None)
    member = step.group.members.get(member_id)
    if member is None:
        return Result()
    if not member.is_new and (member.awaiting_join or member.awaiting_sync):
        # Kafka's hasSatisfiedHeartbeat: a member waiting in JoinGroup or SyncGroup is alive.
        _arm_session(step, member, now)
        return step.result(shard, None)
    log.info("member session expired", group_id=group_id, member_id=member_id)
    timeline.note_removed(group_id, member_id, timeline.SESSION_EXPIRED, now)
    _remove_member(step, member_id, now, "session timeout expired")
    return step.result(shard, None)


def join_deadline(shard: Any, group_id: str, now: int) -> Result:
    """The join phase ends: members that did not rejoin in time are dropped."""
    group = _group(shard, group_id)
    if group is None or group.state is not Preparing:
        return Result()
    step = _Step(group.copy())
    delay = shard.classic_config.initial_rebalance_delay_ms
    limit = group.state_timestamp_ms + group.max_rebalance_timeout_ms()
    if group.initial_rebalance and group.new_member_added and now < limit:
        # KIP-134: a member joining during the initial delay extends it, up to the rebalance
        # timeout, so that a group starting up rebalances once rather than once per member.
        step.group.new_member_added = False
        step.timers.append((_join_key(group_id), min(now + delay, limit),
                            lambda s, t: join_deadline(s, group_id, t)))
        return step.result(shard, None)
    _complete_join(step, now)
    return step.result(shard, None)


def sync_deadline(shard: Any, group_id: str, generation: int, now: int) -> Result:
    """The leader never sent the assignment: members that did not sync are dropped."""
    group = _group(shard, group_id)
    if group is None or group.state is not Completing or group.generation_id != generation:
        return Result()
    step = _Step(group.copy())
    for member in list(step.group.members.values()):
        if not member.awaiting_sync:
            timeline.note_removed(group_id, member.member_id, timeline.DID_NOT_SYNC, now)
            _drop(step, member.member_id)
    log.info("sync timed out", group_id=group_id, generation=generation)
    _prepare_rebalance(step, now, "leader did not sync in time")
    return step.result(shard, None)


# --- rebalance ----------------------------------------------------------------------------------
def _prepare_rebalance(step: _Step, now: int, reason: str, initial_delay_ms: int = 0) -> None:
    group = step.group
    if group.state is Completing:
        # The assignment being computed is void: pending syncs are told to rejoin.
        for member in list(group.members.values()):
            if member.awaiting_sync:
                step.completions.append((sync_key(group.group_id, member.member_id),
                                         SyncOutcome(ErrorCode.rebalance_in_progress)))
            group.members[member.member_id] = replace(member, assignment=b"",
                                                      awaiting_sync=False)
        step.timers.append((_sync_timer_key(group.group_id),))
    initial = group.state is Empty and initial_delay_ms > 0
    group.initial_rebalance = initial
    group.new_member_added = False
    delay = initial_delay_ms if initial else group.max_rebalance_timeout_ms()
    group.transition(Preparing, now)
    log.info("rebalance started", group_id=group.group_id, reason=reason,
             generation=group.generation_id, members=len(group.members))
    timeline.note_rebalance(group.group_id, group.generation_id, reason, now)
    gid = group.group_id
    step.timers.append((_join_key(gid), now + delay, lambda s, t: join_deadline(s, gid, t)))
    _maybe_complete_join(step, now)


def _maybe_complete_join(step: _Step, now: int) -> None:
    group = step.group
    if group.state is Preparing and group.all_joined() and not group.initial_rebalance:
        _complete_join(step, now)


def _complete_join(step: _Step, now: int) -> None:
    group = step.group
    gid = group.group_id
    for member in list(group.members.values()):
        if not member.awaiting_join:
            log.info("member removed: did not rejoin in time", group_id=gid,
                     member_id=member.member_id)
            timeline.note_removed(gid, member.member_id, timeline.DID_NOT_REJOIN, now)
            _drop(step, member.member_id)
    group.pending_members.clear()
    step.timers.append((_join_key(gid),))
    group.generation_id += 1
    group.initial_rebalance = False
    if not group.members:
        group.protocol_name = None
        group.leader_id = None
        group.transition(Empty, now)
        step.records.append(group.record())
        log.info("group is empty", group_id=gid, generation=group.generation_id)
        return
    group.protocol_name = group.select_protocol()
    if group.leader_id not in group.members:
        group.leader_id = next(iter(group.members))
    group.transition(Completing, now)
    members = tuple((m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                    for m in group.members.values())
    for member in list(group.members.values()):
        leader = member.member_id == group.leader_id
        step.completions.append((join_key(gid, member.member_id), JoinOutcome(
            ErrorCode.none, member.member_id, group.generation_id, group.protocol_type,
            group.protocol_name, group.leader_id or "", False, members if leader else ())))
        group.members[member.member_id] = replace(member, awaiting_join=False, is_new=False)
        _arm_session(step, member, now)
    log.info("join phase complete", group_id=gid, generation=group.generation_id,
             protocol=group.protocol_name, leader=group.leader_id, members=len(group.members))
    generation = group.generation_id
    step.timers.append((_sync_timer_key(gid), now + group.max_rebalance_timeout_ms(),
                        lambda s, t: sync_deadline(s, gid, generation, t)))


def _drop(step: _Step, member_id: str) -> None:
    """Remove a member without starting a rebalance; answer what it was waiting for."""
    group = step.group
    member = group.members.pop(member_id, None)
    if member is None:
        return
    if member.awaiting_join:
        step.completions.append((join_key(group.group_id, member_id),
                                 JoinOutcome(ErrorCode.unknown_member_id, member_id)))
    if member.awaiting_sync:
        step.completions.append((sync_key(group.group_id, member_id),
                                 SyncOutcome(ErrorCode.unknown_member_id)))
    _disarm_session(step, member_id)
    if group.leader_id == member_id:
        group.leader_id = next(iter(group.members), None)


def _remove_member(step: _Step, member_id: str, now: int, reason: str) -> None:
    group = step.group
    _drop(step, member_id)
    if group.state in (Stable, Completing):
        _prepare_rebalance(step, now, reason)
    elif group.state is Preparing:
        _maybe_complete_join(step, now)


def force_rebalance(shard: Any, group_id: str, now: int, reason: str) -> Result:
    """Start a rebalance as a joining member would (the control endpoint's ``POST
    /groups/<group>/rebalance``): a Stable or CompletingRebalance group prepares a rebalance,
    its members are told to rejoin at their next heartbeat; a group already rebalancing, or
    empty, is left as it is. The response is the group's state name after it."""
    group = _group(shard, group_id)
    if group is None:
        return Result()
    if group.state not in (Stable, Completing):
        return Result(response=group.state.value)
    step = _Step(group.copy())
    _prepare_rebalance(step, now, reason)
    return step.result(shard, step.group.state.value)


# --- JoinGroup ----------------------------------------------------------------------------------
def join(shard: Any, request: JoinRequest, now: int, replacing: Sequence[Any] = ()) -> Result:
    """JoinGroup to the classic group ``request.group_id`` (or a new one). ``replacing``: the
    tombstones of an empty group of another type that the new classic group replaces (the
    caller, ``groups.classic_protocol``, decides when that is allowed); any other group of
    another type holding the id is INCONSISTENT_GROUP_PROTOCOL."""
    config: ClassicConfig = shard.classic_config
    error = validate_join(request, config)
    other = shard.groups.get(request.group_id)
    if error is None and other is not None and not isinstance(other, ClassicGroup) \
            and not replacing:
        error = ErrorCode.inconsistent_group_protocol
    if error is not None:
        return Result((), JoinOutcome(error, request.member_id))
    prefix: list[Any] = list(replacing)
    existing = _group(shard, request.group_id)
    if existing is None:
        if request.member_id != UNKNOWN_MEMBER_ID:
            return Result((), JoinOutcome(ErrorCode.unknown_member_id, request.member_id))
        existing = ClassicGroup(request.group_id, state_timestamp_ms=now)
    group = existing
    if group.state is Dead:
        return Result((), JoinOutcome(ErrorCode.coordinator_not_available, request.member_id))
    names = [name for name, _ in request.protocols]
    if not group.supports(request.protocol_type, names):
        return Result((), JoinOutcome(ErrorCode.inconsistent_group_protocol, request.member_id))
    step = _Step(group.copy(), list(prefix))
    if step.group.protocol_type is None:
        step.group.protocol_type = request.protocol_type
    step.initial_delay_ms = config.initial_rebalance_delay_ms
    if request.member_id == UNKNOWN_MEMBER_ID:
        response = _join_unknown_member(step, request, now, config)
    else:
        response = _join_known_member(step, request, now)
    return step.result(shard, response)


def validate_join(request: JoinRequest, config: ClassicConfig) -> ErrorCode | None:
    """The checks every JoinGroup passes first, whatever group holds the id."""
    if not request.group_id:
        return ErrorCode.invalid_group_id
    if not (config.min_session_timeout_ms <= request.session_timeout_ms
            <= config.max_session_timeout_ms):
        return ErrorCode.invalid_session_timeout
    if not request.protocol_type or not request.protocols:
        return ErrorCode.inconsistent_group_protocol
    return None


def _new_member(request: JoinRequest, member_id: str) -> ClassicMember:
    return ClassicMember(member_id=member_id, group_instance_id=request.group_instance_id,
                         client_id=request.client_id, client_host=request.client_host,
                         rebalance_timeout_ms=request.rebalance_timeout_ms,
                         session_timeout_ms=request.session_timeout_ms,
                         protocol_type=request.protocol_type, protocols=request.protocols,
                         awaiting_join=True, is_new=True)


def _join_unknown_member(step: _Step, request: JoinRequest, now: int,
                         config: ClassicConfig) -> Any:
    group = step.group
    if request.group_instance_id is not None:
        old = group.static_member(request.group_instance_id)
        if old is not None:
            return _replace_static_member(step, old, request, now)
    if len(group.members) + len(group.pending_members) >= config.max_size:
        return JoinOutcome(ErrorCode.group_max_size_reached, UNKNOWN_MEMBER_ID)
    member_id = new_member_id(request.group_instance_id or request.client_id)
    if request.require_known_member_id and request.group_instance_id is None:
        # KIP-394: the member learns its id first, then joins with it.
        group.pending_members.add(member_id)
        gid = group.group_id
        step.timers.append((_session_key(gid, member_id), now + request.session_timeout_ms,
                            lambda s, t: session_expired(s, gid, member_id, t)))
        return JoinOutcome(ErrorCode.member_id_required, member_id)
    return _add_member_and_rebalance(step, _new_member(request, member_id), now, request)


def _add_member_and_rebalance(step: _Step, member: ClassicMember, now: int,
                              request: JoinRequest) -> Any:
    group = step.group
    if not group.members:
        group.protocol_type = member.protocol_type  # an empty group takes its first member's
    group.members[member.member_id] = member
    group.new_member_added = True
    if group.leader_id is None:
        group.leader_id = member.member_id
    _arm_session(step, member, now)
    log.info("member joins the classic group", group_id=group.group_id,
             member_id=member.member_id, instance_id=member.group_instance_id)
    reason = request.reason or f"member {member.member_id} joined"
    if group.state in (Empty, Stable, Completing):
        initial = step.initial_delay_ms if group.state is Empty else 0
        _prepare_rebalance(step, now, reason, initial)
    else:
        _maybe_complete_join(step, now)
    return Pending(join_key(group.group_id, member.member_id)) \
        if _still_waiting(step, member.member_id) else _completed(step, member.member_id)


def _still_waiting(step: _Step, member_id: str) -> bool:
    key = join_key(step.group.group_id, member_id)
    return all(done_key != key for done_key, _ in step.completions)


def _completed(step: _Step, member_id: str) -> Any:
    """The member's own answer when the join completed within this very request."""
    key = join_key(step.group.group_id, member_id)
    for index, (done_key, outcome) in enumerate(step.completions):
        if done_key == key:
            del step.completions[index]
            return outcome
    raise AssertionError("no completion for the member")


def _replace_static_member(step: _Step, old: ClassicMember, request: JoinRequest,
                           now: int) -> Any:
    """KIP-345: a static member restarting gets a new member id and keeps its assignment; the
    old instance is fenced. No rebalance unless its protocols changed or the group is mid-way."""
    group = step.group
    gid = group.group_id
    new_id = new_member_id(request.group_instance_id)
    member = replace(_new_member(request, new_id), assignment=old.assignment,
                     awaiting_join=False, is_new=False)
    if old.awaiting_join:
        step.completions.append((join_key(gid, old.member_id),
                                 JoinOutcome(ErrorCode.fenced_instance_id, old.member_id)))
    if old.awaiting_sync:
        step.completions.append((sync_key(gid, old.member_id),
                                 SyncOutcome(ErrorCode.fenced_instance_id)))
    del group.members[old.member_id]
    _disarm_session(step, old.member_id)
    group.members[new_id] = member
    if group.leader_id == old.member_id:
        group.leader_id = new_id
    _arm_session(step, member, now)
    log.info("static member replaced", group_id=gid, instance_id=request.group_instance_id,
             old_member_id=old.member_id, member_id=new_id)
    timeline.note_removed(gid, old.member_id, timeline.REPLACED, now)
    same_protocols = old.protocols == request.protocols or (
        group.protocol_name is not None
        and old.metadata(group.protocol_name) == member.metadata(group.protocol_name))
    if group.state is Stable and same_protocols:
        step.records.append(group.record())
        leader = group.leader_id == new_id
        members = tuple((m.member_id, m.group_instance_id, m.metadata(group.protocol_name or ""))
                        for m in group.members.values()) if leader else ()
        # KIP-814: a static leader rejoining with nothing changed is told to skip assignment.
        return JoinOutcome(ErrorCode.none, new_id, group.generation_id, group.protocol_type,
                           group.protocol_name, group.leader_id or "", leader, members)
    group.members[new_id] = replace(member, awaiting_join=True)
    if group.state in (Stable, Completing):
        _prepare_rebalance(step, now, f"static member {request.group_instance_id} rejoined")
    else:
        _maybe_complete_join(step, now)
    return Pending(join_key(gid, new_id)) if _still_waiting(step, new_id) \
        else _completed(step, new_id)


def _join_known_member(step: _Step, request: JoinRequest, now: int) -> Any:
    group = step.group
    member_id = request.member_id
    if member_id in group.pending_members:
        group.pending_members.discard(member_id)
        return _add_member_and_rebalance(step, _new_member(request, member_id), now, request)
    error = validate_existing_member(group, member_id, request.group_instance_id)
    if error is not None:
        return JoinOutcome(error, member_id)
    member = group.members[member_id]
    updated = replace(member, protocols=request.protocols,
                      session_timeout_ms=request.session_timeout_ms,
                      rebalance_timeout_ms=request.rebalance_timeout_ms, awaiting_join=True)
    _arm_session(step, updated, now)
    if group.state is Preparing:
        group.members[member_id] = updated
        _maybe_complete_join(step, now)
    elif group.state in (Completing, Stable):
        changed = member.protocols != request.protocols
        leader = group.is_leader(member_id)
        if changed or (group.state is Stable and leader):
            group.members[member_id] = updated
            _prepare_rebalance(step, now, request.reason or f"member {member_id} rejoined")
        else:
            # Rejoining with the same metadata (a lost JoinGroup response, or a follower in a
            # stable group): the current generation is the answer.
            members = tuple((m.member_id, m.group_instance_id,
                             m.metadata(group.protocol_name or ""))
                            for m in group.members.values()) if leader else ()
            return JoinOutcome(ErrorCode.none, member_id, group.generation_id, group.protocol_type,
                               group.protocol_name, group.leader_id or "", False, members)
    else:
        return JoinOutcome(ErrorCode.unknown_member_id, member_id)
    return Pending(join_key(group.group_id, member_id)) if _still_waiting(step, member_id) \
        else _completed(step, member_id)
