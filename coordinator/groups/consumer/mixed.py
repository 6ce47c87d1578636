"""Classic members inside a consumer group (a mixed group, KIP-848's online migration): their
JoinGroup is their heartbeat, SyncGroup returns the reconciled assignment, Heartbeat answers
REBALANCE_IN_PROGRESS when they must rejoin, LeaveGroup removes them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from coordinator.groups.classic.consumer_protocol import (
    decode_subscription,
    encode_assignment,
)
from coordinator.groups.classic.join import JoinOutcome, JoinRequest, SyncOutcome, SyncRequest
from coordinator.groups.classic.model import (
    CONSUMER_PROTOCOL_TYPE,
    UNKNOWN_MEMBER_ID,
    new_member_id,
)
from coordinator.observability import timeline
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result
from protocol import ErrorCode

from . import heartbeat as consumer
from .env import ConsumerGroupEnv
from .membership import _names, remove_members, schedule_session_timeout
from .migration import _ids
from .model import ClassicMemberInfo, ConsumerGroup, ConsumerGroupMember, MemberState

log = get_logger("coordinator.groups.migration")


def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None
                    ) -> ConsumerGroupMember:
    if instance_id is not None:
        member = group.static_member(instance_id)
        if member is None:
            raise CoordinatorError(ErrorCode.unknown_member_id,
                                   f"Instance id {instance_id} is unknown.")
        if member.member_id != member_id:
            raise CoordinatorError(ErrorCode.fenced_instance_id,
                                   f"Instance id {instance_id} is owned by another member.")
    else:
        member = group.member(member_id)
    if member is None or member.classic is None:
        raise CoordinatorError(ErrorCode.unknown_member_id,
                               f"Member {member_id} is not a classic member of group "
                               f"{group.group_id}.")
    return member


def _supports(group: ConsumerGroup, protocol_type: str, names: Sequence[str]) -> bool:
    """Kafka's supportsClassicProtocols: a protocol every classic member supports."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not names:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    return not classic or any(all(name in c.protocol_names() for c in classic)
                              for name in names)


def classic_join(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup,
                 request: JoinRequest, now_ms: int) -> Result:
    """JoinGroup of a classic member into a (non-empty) consumer group: its heartbeat."""
    names = [name for name, _ in request.protocols]
    gid = group.group_id
    others = ConsumerGroup(gid)
    for m in group.members.values():
        if m.member_id != request.member_id:
            others.members[m.member_id] = m
    if not _supports(others, request.protocol_type, names):
        return Result((), JoinOutcome(ErrorCode.inconsistent_group_protocol, request.member_id))
    sub = decode_subscription(request.protocols[0][1])
    if sub is None:
        return Result((), JoinOutcome(ErrorCode.inconsistent_group_protocol, request.member_id))
    member_id = request.member_id
    if member_id == UNKNOWN_MEMBER_ID:
        static = group.static_member(request.group_instance_id)
        member_id = static.member_id if static is not None and static.classic is not None \
            else new_member_id(request.group_instance_id or request.client_id)
        if request.require_known_member_id and request.group_instance_id is None:
            return Result((), JoinOutcome(ErrorCode.member_id_required, member_id))
    elif request.group_instance_id is not None or member_id in group.members:
        # Ids handed out with MEMBER_ID_REQUIRED are not kept (KIP-394): an unknown dynamic id
        # joins as a new member, as in Kafka.
        try:
            _classic_member(group, member_id, request.group_instance_id)
        except CoordinatorError as exc:
            return Result((), JoinOutcome(exc.code, member_id))
    owned = tuple(_ids(env, sub.owned).items())
    hb = consumer.HeartbeatRequest(
        group_id=gid, member_id=member_id, member_epoch=0,
        instance_id=request.group_instance_id, rack_id=sub.rack_id or None,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=sub.topics, owned=owned, client_id=request.client_id,
        client_host=request.client_host,
        classic=ClassicMemberInfo(request.session_timeout_ms, request.protocols))
    try:
        result = consumer.heartbeat(shard, now_ms, env, hb)
    except CoordinatorError as exc:
        return Result((), JoinOutcome(exc.code, member_id))
    response: consumer.HeartbeatResponse = result.response
    log.info("classic member joined the consumer group", group_id=gid, member_id=member_id,
             member_epoch=response.member_epoch)
    return Result(result.records, JoinOutcome(
        ErrorCode.none, member_id, response.member_epoch, CONSUMER_PROTOCOL_TYPE, names[0]),
        result.completions, result.effect)


def _must_rejoin(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    target_epoch, target = group.effective_target(member.member_id)
    if member.member_epoch < target_epoch:  # seed 000: the target *assignment* epoch
        return True
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        return True
    if member.state is MemberState.UNRELEASED_PARTITIONS:
        for topic_id, partitions in target.items():
            held = member.assigned_partitions.get(topic_id, frozenset())
            if any(group.current_partition_epoch(topic_id, p) == -1
                   for p in partitions - held):
                return True
    return False


def classic_sync(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup,
                 request: SyncRequest, now_ms: int) -> Result:
    try:
        member = _classic_member(group, request.member_id, request.group_instance_id)
    except CoordinatorError as exc:
        return Result((), SyncOutcome(exc.code))
    info = member.classic
    assert info is not None
    if request.generation_id != member.member_epoch:
        return Result((), SyncOutcome(ErrorCode.illegal_generation))
    if (request.protocol_type is not None and request.protocol_type != CONSUMER_PROTOCOL_TYPE
            ) or (request.protocol_name is not None
                  and request.protocol_name not in info.protocol_names()):
        return Result((), SyncOutcome(ErrorCode.inconsistent_group_protocol))
    target_epoch, _ = group.effective_target(member.member_id)
    if member.member_epoch < target_epoch and \
            member.state is not MemberState.UNREVOKED_PARTITIONS:
        return Result((), SyncOutcome(ErrorCode.rebalance_in_progress))
    schedule_session_timeout(shard, env, group.group_id, member.member_id, now_ms,
                                      info.session_timeout_ms)
    name = request.protocol_name or info.protocols[0][0]
    sub = decode_subscription(dict(info.protocols).get(name, b""))
    data = encode_assignment(_names(env, member.assigned_partitions),
                             sub.version if sub is not None else 0)
    return Result((), SyncOutcome(ErrorCode.none, data, CONSUMER_PROTOCOL_TYPE, name))


def classic_heartbeat(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup,
                      member_id: str, instance_id: str | None, generation_id: int,
                      now_ms: int) -> Result:
    try:
        member = _classic_member(group, member_id, instance_id)
    except CoordinatorError as exc:
        return Result((), exc.code)
    if generation_id != member.member_epoch:
        return Result((), ErrorCode.illegal_generation)
    # _classic_member returns only members with a ClassicMemberInfo
    classic = cast(ClassicMemberInfo, member.classic)
    schedule_session_timeout(shard, env, group.group_id, member.member_id, now_ms,
                                      classic.session_timeout_ms)
    return Result((), ErrorCode.rebalance_in_progress if _must_rejoin(group, member)
                  else ErrorCode.none)


def classic_leave(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup,
                  members: Sequence[tuple[str, str | None, str | None]], now_ms: int) -> Result:
    errors: list[ErrorCode] = []
    leaving: dict[str, ConsumerGroupMember] = {}
    for member_id, instance_id, _reason in members:
        try:
            if instance_id is not None and member_id == UNKNOWN_MEMBER_ID:
                found = group.static_member(instance_id)
                if found is None or found.classic is None:
                    raise CoordinatorError(ErrorCode.unknown_member_id, "")
                member = found
            else:
                member = _classic_member(group, member_id, instance_id)
        except CoordinatorError as exc:
            errors.append(exc.code)
            continue
        errors.append(ErrorCode.none)
        leaving[member.member_id] = member
        log.info("classic member leaves the consumer group", group_id=group.group_id,
                 member_id=member.member_id)
        timeline.note_removed(group.group_id, member.member_id, timeline.LEFT, now_ms)
    if not leaving:
        return Result((), errors)
    return remove_members(shard, env, group, list(leaving.values()), now_ms, errors)
