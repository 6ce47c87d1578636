"""ShareGroupHeartbeat (KIP-932): the pure handler, member fencing and the timers.

``heartbeat(shard, now_ms, env, request)`` returns a ``Result`` of records and a
:class:`HeartbeatResponse`; errors are raised as ``CoordinatorError`` before any record. The
steps are Kafka's (``GroupMetadataManager.shareGroupHeartbeat``): get or create the group and
the member (validating its epoch), update the member (bumping the group epoch when the
subscriptions change), initialize the share partitions of newly subscribed topics, compute a
new target assignment when one is due (seed 000's interval, inline or offloaded), give the
member its target at once (no revocation in share groups), and (re)arm its session timeout.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from coordinator.groups.common.assignor_job import run_job
from coordinator.groups.modern import members as member_rules
from coordinator.groups.modern import subscription as modern_subscription
from coordinator.groups.modern.heartbeat import MemberRequest, MemberResponse
from coordinator.groups.modern.members import invalid, known_member, note_leaving, unknown_member
from coordinator.groups.modern.subscription import next_group_epoch
from coordinator.groups.modern.target import assignment_due, offloaded
from coordinator.observability import sensors
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result
from coordinator.runtime.result import Record
from protocol import ErrorCode

from . import records
from .env import ShareGroupEnv, installed
from .fetch import close_session, release_member_records
from .initialize import forget_deleted_topics, initialize_partitions
from .model import (
    EMPTY,
    LEAVE_GROUP_MEMBER_EPOCH,
    Assignment,
    ShareGroup,
    ShareGroupMember,
    SubscribedTopic,
)
from .offload import start_effect
from .settings import group_settings
from .target import prepare, result_records

log = get_logger("coordinator.groups.share")

MAX_MEMBER_ID_LENGTH = 36
"""Kafka's ``KafkaApis.isMemberIdValid``: client-generated member ids are at most 36 chars."""


@dataclass(frozen=True, slots=True)
class HeartbeatRequest(MemberRequest):
    rack_id: str | None = None
    subscribed_topic_names: Sequence[str] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatResponse(MemberResponse):
    assignment: Assignment | None = None


def validate(request: HeartbeatRequest) -> None:
    """Kafka's request checks (INVALID_REQUEST); the client generates its member id."""
    if not request.member_id:
        raise invalid("MemberId can't be empty.")
    if len(request.member_id) > MAX_MEMBER_ID_LENGTH:
        raise invalid("Invalid member id in the request.")
    if not request.group_id:
        raise invalid("GroupId can't be empty.")
    if request.rack_id == "":
        raise invalid("RackId can't be empty.")
    if request.member_epoch == 0 and not request.subscribed_topic_names:
        raise invalid("SubscribedTopicNames must be set in first request.")
    if request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise invalid("MemberEpoch is invalid.")


# ------------------------------------------------------------------------------ lookups
def share_group(shard: Any, group_id: str) -> ShareGroup:
    """The share group, or GROUP_ID_NOT_FOUND (also when the id is another type's group)."""
    return member_rules.group_of(shard, group_id, ShareGroup, "share")


def check_member_epoch(member: ShareGroupMember, received: int) -> None:
    """FENCED_MEMBER_EPOCH unless the epoch is the member's or its previous one (a lost
    response); epoch 0 is a rejoin of the same member id and is accepted."""
    member_rules.check_member_epoch("share", received, member.member_epoch,
                               member.previous_member_epoch)


def subscription_metadata(names: Iterable[str], env: ShareGroupEnv,
                          current: Mapping[str, SubscribedTopic]
                          ) -> Mapping[str, SubscribedTopic]:
    """The subscribed topics that exist, reusing ``current``'s entries that still hold."""
    return modern_subscription.subscription_metadata(sorted(set(names)), env.topics, current)


def _names(members: Iterable[ShareGroupMember]) -> set[str]:
    return {name for m in members for name in m.subscribed_topic_names}


# ------------------------------------------------------------------------------ timers
def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return member_rules.session_key("share", group_id, member_id)


def schedule_session_timeout(shard: Any, env: ShareGroupEnv, group_id: str, member_id: str,
                             now_ms: int) -> None:
    def remove(shard: Any, group: ShareGroup, member: ShareGroupMember, now: int) -> Result:
        return remove_member(shard, env, group, member, now)

    timeout = group_settings(shard, env, group_id).session_timeout_ms
    member_rules.schedule_session_timeout(shard, "share", ShareGroup, group_id, member_id,
                                          now_ms + timeout, remove)


def rearm_on_load(shard: Any, now_ms: int) -> None:
    """Members loaded from the log must heartbeat again within their session timeout."""
    env = installed()
    member_rules.rearm_members(shard, ShareGroup, lambda group, member: schedule_session_timeout(
        shard, env, group.group_id, member.member_id, now_ms))


# ------------------------------------------------------------------------------ fencing
def remove_member(shard: Any, env: ShareGroupEnv, group: ShareGroup, member: ShareGroupMember,
                  now_ms: int, response: Any = None, *, leaving: bool = False) -> Result:
    """``member`` leaves or is fenced (Kafka's ``shareGroupFenceMember``): its records go and
    the group epoch is bumped. The records it holds acquired are released at once, and its
    share session closed, unless it is ``leaving`` with a share session still open: a client
    that leaves closes its session itself, with its last acknowledgements (librdkafka sends
    that ShareAcknowledge and the leave heartbeat at the same time, on two connections), and
    the session's close releases what is left."""
    gid, mid = group.group_id, member.member_id
    out: list[Record] = records.member_tombstones(gid, mid)
    rest = [m for m in group.members.values() if m.member_id != mid]
    metadata = subscription_metadata(_names(rest), env, group.subscription_metadata)
    if metadata != group.subscription_metadata:
        out.append(records.subscription_metadata(gid, metadata.values()))
    epoch = next_group_epoch(group)
    out.append(records.group_epoch(gid, epoch))
    if not rest:
        out.append(records.target_metadata(gid, epoch, 0))
    log.info("bumped group epoch", group_id=gid, group_epoch=epoch, reason="member removed",
             member_id=mid)
    sensors.record_share_rebalance(gid)
    shard.timers.cancel(session_key(gid, mid))
    if leaving and (gid, mid) in shard.share_sessions:
        return Result(out, response)
    settings = group_settings(shard, env, gid)
    released, effect = release_member_records(shard, gid, mid, settings.delivery_count_limit,
                                              now_ms, env)
    close_session(shard, env, gid, mid)  # a member that is gone fetches no more
    out += released
    return Result(out, response, effect=effect)


def _leave(shard: Any, env: ShareGroupEnv, request: HeartbeatRequest, now_ms: int) -> Result:
    group = share_group(shard, request.group_id)
    member = known_member(group, request.member_id)
    note_leaving(log, "share", group, member, now_ms)
    return remove_member(shard, env, group, member, now_ms,
                         HeartbeatResponse(request.member_id, LEAVE_GROUP_MEMBER_EPOCH, 0),
                         leaving=True)


# ------------------------------------------------------------------------------ heartbeat
def _updated(member: ShareGroupMember, request: HeartbeatRequest) -> ShareGroupMember:
    names = request.subscribed_topic_names
    return replace(
        member,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        subscribed_topic_names=tuple(sorted(set(names))) if names is not None
        else member.subscribed_topic_names,
        client_id=request.client_id, client_host=request.client_host)


def _filtered(target: Assignment, metadata: Mapping[str, SubscribedTopic],
              member: ShareGroupMember) -> Assignment:
    """The part of ``target`` in the member's subscribed topics (a target computed before a
    subscription change may hold more)."""
    ids = {metadata[name].topic_id for name in member.subscribed_topic_names
           if name in metadata}
    if all(topic_id in ids for topic_id in target):
        return target
    return {topic_id: parts for topic_id, parts in target.items() if topic_id in ids}


def heartbeat(shard: Any, now_ms: int, env: ShareGroupEnv, request: HeartbeatRequest) -> Result:
    if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        return _leave(shard, env, request, now_ms)
    existing = shard.groups.get(request.group_id)
    if existing is None:
        if request.member_epoch != 0:
            raise CoordinatorError(ErrorCode.group_id_not_found,
                                   f"Share group {request.group_id} not found.")
        group = ShareGroup(request.group_id)  # materialised when its records replay
    else:
        group = share_group(shard, request.group_id)
    max_size = env.settings.max_size
    if len(group.members) >= max_size and request.member_id not in group.members:
        raise CoordinatorError(
            ErrorCode.group_max_size_reached,
            f"The share group has reached its maximum capacity of {max_size} members.")
    gid = group.group_id
    own = group_settings(shard, env, gid)
    out: list[Record] = []
    effect = None

    # 1. The member, and the group epoch if the subscriptions changed.
    member = group.member(request.member_id)
    is_new = member is None
    if member is None:
        if request.member_epoch != 0:
            raise unknown_member(gid, request.member_id)
        member = ShareGroupMember(request.member_id)
    else:
        check_member_epoch(member, request.member_epoch)
    updated = _updated(member, request)
    if is_new or updated != member:
        out.append(records.member_metadata(gid, updated))
    if is_new:
        log.info("member joins the share group", group_id=gid, member_id=updated.member_id)
    bump = group.group_epoch == 0 or \
        updated.subscribed_topic_names != member.subscribed_topic_names
    members = dict(group.members)
    members[updated.member_id] = updated
    metadata: Mapping[str, SubscribedTopic] = group.subscription_metadata
    if bump or is_new:
        metadata = subscription_metadata(_names(members.values()), env,
                                         group.subscription_metadata)
        if metadata != group.subscription_metadata:
            out.append(records.subscription_metadata(gid, metadata.values()))
            bump = True
    group_epoch = next_group_epoch(group) if bump else group.group_epoch

    # 2. Share partitions of newly subscribed topics (or new partitions) get their state now.
    init_records = initialize_partitions(group, metadata, group_epoch, now_ms)
    if init_records:
        out += init_records
        if not bump:
            bump, group_epoch = True, next_group_epoch(group)
    if bump:
        out.append(records.group_epoch(gid, group_epoch))
        log.info("bumped group epoch", group_id=gid, group_epoch=group_epoch)
        sensors.record_share_rebalance(gid)

    # 3. A new target assignment, if one is due and no run is in flight (seed 000): inline, or
    #    offloaded (the target stays as it is until the run's result is installed).
    target_epoch, target = group.effective_target(updated.member_id)
    if group.assignor_run is None and assignment_due(group, group_epoch, now_ms,
                                                     own.assignment_interval_ms):
        assignor = env.settings.default_assignor
        prepared = prepare(group, group_epoch, assignor, members, group.target, metadata)
        if offloaded(own, env):
            effect = start_effect(shard, gid, prepared, env.offloader)
            log.info("offloaded target assignment", group_id=gid, group_epoch=group_epoch,
                     assignor=assignor, members=len(members))
        else:
            outcome = run_job(prepared.job)
            new, target_records = result_records(group, prepared, outcome, members, now_ms)
            out += target_records
            sensors.record_assignment(gid, assignor, outcome.assign_ms, outcome.moved)
            target_epoch = group_epoch
            target = new.get(updated.member_id, group.target_of(updated.member_id))
            log.info("computed target assignment", group_id=gid, assignment_epoch=group_epoch,
                     assignor=assignor, members=len(members),
                     assign_ms=round(outcome.assign_ms, 2))

    # 4. The member takes its target at once (no revocation step in share groups).
    assigned = _filtered(target, metadata, updated)
    reconciled = updated
    if updated.member_epoch != target_epoch or assigned != updated.assigned_partitions:
        reconciled = replace(updated, member_epoch=target_epoch,
                             previous_member_epoch=updated.member_epoch,
                             assigned_partitions=assigned or EMPTY)
    if is_new or reconciled != updated:
        out.append(records.current_assignment(gid, reconciled))
    schedule_session_timeout(shard, env, gid, reconciled.member_id, now_ms)

    full = request.member_epoch == 0 or request.subscribed_topic_names is not None
    changed = reconciled.assigned_partitions != member.assigned_partitions
    return Result(out, HeartbeatResponse(
        reconciled.member_id, reconciled.member_epoch, own.heartbeat_interval_ms,
        reconciled.assigned_partitions if full or changed else None), effect=effect)


# ------------------------------------------------------------------------------ topic changes
def refresh_subscription_metadata(shard: Any, now_ms: int, env: ShareGroupEnv,
                                  topic_name: str) -> Result:
    """Bump the epoch of every share group subscribed to ``topic_name`` whose subscription
    metadata changed (topic created, deleted, or partitions added); new partitions get their
    share state at once, and the state of a deleted topic goes (Kafka's
    ``maybeCleanupShareState``)."""
    out: list[Record] = []
    for group in list(shard.groups.values()):
        if not isinstance(group, ShareGroup):
            continue
        deleted = forget_deleted_topics(group, env)
        if deleted:
            out += deleted
            log.info("share state of a deleted topic removed", group_id=group.group_id,
                     topic=topic_name)
        if topic_name not in _names(group.members.values()):
            continue
        metadata = subscription_metadata(_names(group.members.values()), env,
                                         group.subscription_metadata)
        if metadata == group.subscription_metadata:
            continue
        epoch = next_group_epoch(group)
        out.append(records.subscription_metadata(group.group_id, metadata.values()))
        out += initialize_partitions(group, metadata, epoch, now_ms)
        out.append(records.group_epoch(group.group_id, epoch))
        log.info("bumped group epoch on a topic change", group_id=group.group_id,
                 group_epoch=epoch, topic=topic_name)
        sensors.record_share_rebalance(group.group_id)
    return Result(out)
