"""Mixed groups and online migration (KIP-848, issue 5 item 7; Kafka's GroupMetadataManager).

``group.consumer.migration.policy`` decides whether a classic group using the consumer embedded
protocol is upgraded to a consumer group when a consumer protocol member joins it, and whether
a consumer group whose remaining members all use the classic protocol is downgraded back.

Inside a consumer group, classic members keep using JoinGroup/SyncGroup/Heartbeat/LeaveGroup:

* JoinGroup is that member's heartbeat: subscription and owned partitions come from its
  ConsumerProtocolSubscription; the answer's generation is its member epoch;
* SyncGroup returns its reconciled assignment as ConsumerProtocolAssignment bytes;
* Heartbeat answers REBALANCE_IN_PROGRESS when it must rejoin: its epoch is behind the target
  assignment epoch (seed 000), it has partitions to revoke, or partitions it waited for are free.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from types import SimpleNamespace
from typing import Any, cast

from coordinator.groups.classic.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from coordinator.groups.classic.join import (
    JoinOutcome,
    JoinRequest,
    SyncOutcome,
    SyncRequest,
    _arm_session,
    _prepare_rebalance,
    _Step,
    join_key,
    sync_key,
)
from coordinator.groups.classic.model import (
    CONSUMER_PROTOCOL_TYPE,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClassicGroupState,
    ClassicMember,
    new_member_id,
)
from coordinator.observability import timeline
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result
from coordinator.runtime.result import Record
from protocol import ErrorCode

from . import heartbeat as consumer
from . import records
from .assignment_forms import assignment_of
from .env import ConsumerGroupEnv, installed
from .model import (
    Assignment,
    ClassicMemberInfo,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    interned_topic_names,
)

log = get_logger("coordinator.groups.migration")


def env() -> ConsumerGroupEnv:
    """The consumer group environment classic handlers use (the app installs it)."""
    return installed()


def _not_found(message: str) -> CoordinatorError:
    return CoordinatorError(ErrorCode.group_id_not_found, message)


def _ids(env: ConsumerGroupEnv, pairs: Iterable[tuple[str, Iterable[int]]]
         ) -> dict[uuid.UUID, frozenset[int]]:
    """(topic name, partitions) pairs as an assignment by topic id (unknown topics dropped)."""
    out = []
    for name, partitions in pairs:
        topic = env.topics.topic(name)
        if topic is not None:
            out.append((topic.topic_id, [p for p in partitions if 0 <= p < topic.partitions]))
    return assignment_of(out)


def _names(env: ConsumerGroupEnv, assignment: Assignment) -> list[tuple[str, list[int]]]:
    out = []
    for topic_id, partitions in assignment.items():
        topic = env.topics.topic_by_id(topic_id)
        if topic is not None:
            out.append((topic.name, sorted(partitions)))
    return out


def _materialise(shard: Any, group_id: str, written: Sequence[Record]) -> ConsumerGroup:
    """The consumer group ``written`` makes, replayed with ``shard``'s replayers on a scratch
    shard (handlers are pure)."""
    scratch = SimpleNamespace(groups={})
    for key, value in written:
        shard.replayers[type(key)](scratch, -1, key, value)
    group = scratch.groups.get(group_id)
    return group if isinstance(group, ConsumerGroup) else ConsumerGroup(group_id)


# ------------------------------------------------------------------------------ upgrade
def upgrade(shard: Any, env: ConsumerGroupEnv, existing: Any, now_ms: int
            ) -> tuple[ConsumerGroup, list[Record], list[tuple[Any, Any]]]:
    """A consumer protocol member joins the classic group ``existing``: (the consumer group it
    becomes, the records converting it, answers for the classic members' waiting requests).
    An empty classic group is simply replaced; GROUP_ID_NOT_FOUND when it cannot be upgraded."""
    if not isinstance(existing, ClassicGroup):
        raise _not_found(f"Group {getattr(existing, 'group_id', '')} is not a consumer group.")
    gid = existing.group_id
    if not existing.members:
        log.info("empty classic group replaced by a consumer group", group_id=gid)
        return ConsumerGroup(gid), [existing.tombstone()], []
    if not env.settings.upgrade_enabled:
        raise _not_found(f"Cannot upgrade classic group {gid} to consumer group because the "
                         "online upgrade is disabled.")
    if existing.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise _not_found(f"Cannot upgrade classic group {gid} to consumer group because the "
                         "group does not use the consumer embedded protocol.")
    if len(existing.members) >= env.settings.max_size:
        raise _not_found(f"Cannot upgrade classic group {gid} to consumer group because the "
                         "group size exceeds the consumer group maximum size.")
    epoch = existing.generation_id
    members: list[ConsumerGroupMember] = []
    claimed: set[tuple[uuid.UUID, int]] = set()
    owned_by: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
    subs = {}
    for m in existing.members.values():
        sub = decode_subscription(m.metadata(existing.protocol_name or "")
                                  or (m.protocols[0][1] if m.protocols else b""))
        assigned = decode_assignment(m.assignment)
        if sub is None or assigned is None:
            raise _not_found(f"Cannot upgrade classic group {gid} to consumer group because "
                             f"member {m.member_id} has an invalid consumer protocol.")
        subs[m.member_id] = sub
        owned_by[m.member_id] = _ids(env, assigned)
        claimed |= {(t, p) for t, ps in owned_by[m.member_id].items() for p in ps}
    for m in existing.members.values():
        # Cooperative members keep partitions across rebalances and report them in their
        # subscription: count those as theirs too unless another member was assigned them.
        extra = _ids(env, subs[m.member_id].owned)
        mine = dict(owned_by[m.member_id])
        for topic_id, partitions in extra.items():
            free = frozenset(p for p in partitions if (topic_id, p) not in claimed)
            if free:
                mine[topic_id] = mine.get(topic_id, frozenset()) | free
                claimed |= {(topic_id, p) for p in free}
        sub = subs[m.member_id]
        members.append(ConsumerGroupMember(
            m.member_id, member_epoch=epoch, previous_member_epoch=epoch,
            instance_id=m.group_instance_id, rack_id=sub.rack_id or None,
            rebalance_timeout_ms=m.rebalance_timeout_ms, client_id=m.client_id,
            client_host=m.client_host, subscribed_topic_names=interned_topic_names(sub.topics),
            assigned_partitions=mine,
            classic=ClassicMemberInfo(m.session_timeout_ms, m.protocols)))
    out: list[Record] = [existing.tombstone()]
    names: set[str] = set()
    for member in members:
        out += [records.member_metadata(gid, member),
                records.target_member(gid, member.member_id, member.assigned_partitions),
                records.current_assignment(gid, member)]
        names |= set(member.subscribed_topic_names)
    out += [records.subscription_metadata(
                gid, consumer.subscription_metadata(sorted(names), env).values()),
            records.group_epoch(gid, epoch),
            records.target_metadata(gid, epoch, now_ms)]
    completions: list[tuple[Any, Any]] = []
    for m in existing.members.values():
        if m.awaiting_join:
            completions.append((join_key(gid, m.member_id),
                                JoinOutcome(ErrorCode.rebalance_in_progress, m.member_id)))
        if m.awaiting_sync:
            completions.append((sync_key(gid, m.member_id),
                                SyncOutcome(ErrorCode.rebalance_in_progress)))
    for member in members:
        # every member was built above with its ClassicMemberInfo
        classic = cast(ClassicMemberInfo, member.classic)
        consumer.schedule_session_timeout(shard, env, gid, member.member_id, now_ms,
                                          classic.session_timeout_ms)
    log.info("classic group upgraded to a consumer group", group_id=gid, group_epoch=epoch,
             members=len(members))
    return _materialise(shard, gid, out), out, completions


# ------------------------------------------------------------------------------ removal, downgrade
def remove_members(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup,
                   members: Sequence[ConsumerGroupMember], now_ms: int,
                   response: Any = None) -> Result:
    """Records removing ``members`` (one group epoch bump); then the downgrade, if due."""
    gid = group.group_id
    gone = {m.member_id for m in members}
    remaining = [m for m in group.members.values() if m.member_id not in gone]
    for member in members:
        consumer.cancel_timers(shard, gid, member.member_id)
    if remaining and all(m.classic is not None for m in remaining) \
            and any(m.classic is None for m in members) and env.settings.downgrade_enabled \
            and len(remaining) <= shard.classic_config.max_size:
        downgraded = _downgrade(shard, env, group, remaining, now_ms)
        if downgraded is not None:
            written, step = downgraded
            result = step.result(shard, response)
            return Result(written + list(result.records), response, result.completions,
                          result.effect)
    out: list[Record] = []
    for member in members:
        out += consumer.fence_member(shard, env, group, member)
    if len(members) > 1:
        # Each fence_member saw one removal: the subscriptions after all of them.
        metadata = consumer.subscription_metadata(
            consumer._names_after(group, members, []), env)
        out.append(records.subscription_metadata(gid, metadata.values()))
    if len(remaining) > 0:
        consumer.arm_after_bump(shard, env, group, now_ms)  # the run the bump made due
    return Result(out, response)


def _downgrade(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup,
               remaining: Sequence[ConsumerGroupMember], now_ms: int
               ) -> tuple[list[Record], _Step] | None:
    """The consumer group becomes a classic group of its classic members, which must rejoin."""
    gid = group.group_id
    generation = consumer._next_group_epoch(group)
    classic = ClassicGroup(gid, protocol_type=CONSUMER_PROTOCOL_TYPE, generation_id=generation,
                           state_timestamp_ms=now_ms)
    for m in remaining:
        info = m.classic
        assert info is not None
        version = 0
        sub = decode_subscription(info.protocols[0][1]) if info.protocols else None
        if sub is not None:
            version = sub.version
        classic.members[m.member_id] = ClassicMember(
            member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms if m.rebalance_timeout_ms > 0
            else info.session_timeout_ms,
            session_timeout_ms=info.session_timeout_ms, protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=info.protocols,
            assignment=encode_assignment(_names(env, m.assigned_partitions), version))
    if not classic._candidates():
        log.info("cannot downgrade: the classic members share no protocol", group_id=gid)
        return None
    classic.protocol_name = classic.select_protocol()
    classic.leader_id = next(iter(classic.members))
    classic.state = ClassicGroupState.STABLE
    out: list[Record] = list(group.tombstones())
    out.append(classic.record())
    step = _Step(classic.copy())
    for m in remaining:
        consumer.cancel_timers(shard, gid, m.member_id)
        _arm_session(step, step.group.members[m.member_id], now_ms)
    _prepare_rebalance(step, now_ms, "the group was downgraded to a classic group")
    log.info("consumer group downgraded to a classic group", group_id=gid,
             generation=generation, members=len(remaining))
    return out, step


# ------------------------------------------------------------------------------ classic members
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
    consumer.schedule_session_timeout(shard, env, group.group_id, member.member_id, now_ms,
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
    consumer.schedule_session_timeout(shard, env, group.group_id, member.member_id, now_ms,
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
