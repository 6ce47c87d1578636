"""ConsumerGroupHeartbeat (KIP-848): the pure handler, member fencing and the timers.

``heartbeat(shard, now_ms, env, request)`` returns a ``Result`` of records and a
:class:`HeartbeatResponse`; errors are raised as ``CoordinatorError`` before any record. The
steps are Kafka's: get or create the group and the member (validating its epoch), update the
member (bumping the group epoch when its subscription changes the group's), compute a new target
assignment when one is due (seed 000's interval), reconcile the member towards its target, and
(re)arm its session timeout.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from coordinator.groups.modern import members as member_rules
from coordinator.groups.modern.heartbeat import MemberRequest, MemberResponse
from coordinator.groups.modern.members import invalid, known_member, note_leaving, unknown_member
from coordinator.groups.modern.subscription import next_group_epoch
from coordinator.groups.modern.target import assignment_due, offloaded
from coordinator.observability import sensors, timeline
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result
from coordinator.runtime.result import Record
from protocol import ErrorCode

from . import client_selection, pacing, records
from . import regex as consumer_regex
from .env import ConsumerGroupEnv
from .membership import (
    _classic_session_ms,
    cancel_timers,
    rebalance_key,
    remove_members,
    schedule_rebalance_timeout,
    schedule_session_timeout,
)
from .migration import upgrade
from .model import (
    FIRST_GROUP_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ClassicMemberInfo,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    SubscribedTopic,
    interned_topic_names,
    is_subset,
)
from .offload import (
    arm_after_bump,
    arm_assign_timer,
    arm_assign_timer_by,
    reschedule_assign_timer,
    start_run,
)
from .reconcile import reconcile
from .resolution import start_resolution
from .settings import group_settings
from .subscription import (
    names_after,
    subscription_after,
    subscription_metadata,
)
from .target import subscribed_ids

log = get_logger("coordinator.groups.consumer")

OwnedPartitions = Sequence[tuple[uuid.UUID, Collection[int]]]


@dataclass(frozen=True, slots=True)
class HeartbeatRequest(MemberRequest):
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: Sequence[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: OwnedPartitions | None = None
    client_id: str = ""
    client_host: str = ""
    classic: ClassicMemberInfo | None = None
    """Set when a classic member's JoinGroup runs as its heartbeat (``migration``)."""
    client_assignors: tuple[client_selection.ClientAssignor, ...] | None = None
    """The draft's ``ClientAssignors`` (seed 003): None if unchanged (or the server does not
    serve client-side assignors)."""


@dataclass(frozen=True, slots=True)
class HeartbeatResponse(MemberResponse):
    assignment: Assignment | None = None
    should_compute_assignment: bool = False
    """The draft's ``ShouldComputeAssignment``: the member is chosen to compute the target
    (``client_selection``)."""


def validate(request: HeartbeatRequest, assignors: Iterable[str]) -> None:
    """Kafka's request checks (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR), v1 rules: the client
    generates its member id."""
    if not request.member_id:
        raise invalid("MemberId can't be empty.")
    if not request.group_id:
        raise invalid("GroupId can't be empty.")
    if request.instance_id == "":
        raise invalid("InstanceId can't be empty.")
    if request.rack_id == "":
        raise invalid("RackId can't be empty.")
    epoch = request.member_epoch
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or len(request.owned) > 0:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null "
                           "when (re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid("MemberEpoch is invalid.")
    if request.subscribed_topic_regex:
        consumer_regex.check(request.subscribed_topic_regex)  # INVALID_REGULAR_EXPRESSION
    supported = list(assignors)
    if request.server_assignor is not None and request.server_assignor not in supported:
        raise CoordinatorError(
            ErrorCode.unsupported_assignor,
            f"ServerAssignor {request.server_assignor} is not supported. Supported assignors: "
            f"{', '.join(supported)}.")


# ------------------------------------------------------------------------------ lookups
def consumer_group(shard: Any, group_id: str) -> ConsumerGroup:
    """The consumer group, or GROUP_ID_NOT_FOUND."""
    return member_rules.group_of(shard, group_id, ConsumerGroup, "consumer")


def check_member_epoch(member: ConsumerGroupMember, received: int,
                       owned: OwnedPartitions | None) -> None:
    """FENCED_MEMBER_EPOCH unless the epoch is the member's, or its previous one with owned
    partitions a subset of its assignment (the KIP's lost-response case). Epoch 0 is a
    rejoin of the same member id and is accepted (it owns nothing)."""
    member_rules.check_member_epoch(
        "consumer", received, member.member_epoch, member.previous_member_epoch,
        lambda: is_subset(owned, member.assigned_partitions))


# ------------------------------------------------------------------------------ settings


# ------------------------------------------------------------------------------ timers


# ------------------------------------------------------------------------------ fencing


def _leave(shard: Any, env: ConsumerGroupEnv, request: HeartbeatRequest,
           now_ms: int) -> Result:
    group = consumer_group(shard, request.group_id)
    if request.instance_id is None:
        member = known_member(group, request.member_id)
    else:
        member = group.static_member(request.instance_id)
        if member is None:
            raise CoordinatorError(ErrorCode.unknown_member_id,
                                   f"Instance id {request.instance_id} is unknown.")
        if member.member_id != request.member_id:
            raise CoordinatorError(
                ErrorCode.fenced_instance_id,
                f"Static member {request.member_id} with instance id {request.instance_id} "
                f"was fenced by member {member.member_id}.")
    response = HeartbeatResponse(request.member_id, request.member_epoch, 0)
    if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        # A static member leaves for now: it keeps its partitions until it comes back or its
        # session times out.
        log.info("static member leaves the consumer group temporarily", group_id=group.group_id,
                 member_id=member.member_id, instance_id=member.instance_id)
        shard.timers.cancel(rebalance_key(group.group_id, member.member_id))
        leaving = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                          previous_member_epoch=member.member_epoch,
                          partitions_pending_revocation={})
        return Result([records.current_assignment(group.group_id, leaving)], response)
    note_leaving(log, "consumer", group, member, now_ms)
    return remove_members(shard, env, group, [member], now_ms, response)


# ------------------------------------------------------------------------------ heartbeat
def _replace_static(group: ConsumerGroup, old: ConsumerGroupMember, new_id: str,
                    out: list[Record]) -> ConsumerGroupMember:
    """Kafka's replaceMember: the new instance takes the old one's assignment and target."""
    gid = group.group_id
    new = replace(old, member_id=new_id, member_epoch=0, previous_member_epoch=0)
    out += [
        records.current_assignment_tombstone(gid, old.member_id),
        records.target_member_tombstone(gid, old.member_id),
        records.member_metadata_tombstone(gid, old.member_id),
        *client_selection.tombstones(group, old.member_id),
        records.member_metadata(gid, new),
        records.target_member(gid, new_id, group.target_of(old.member_id)),
        records.current_assignment(gid, new),
    ]
    return new


def _member_for(group: ConsumerGroup, request: HeartbeatRequest, out: list[Record]
                ) -> tuple[ConsumerGroupMember, ConsumerGroupMember | None, bool]:
    """(member before this heartbeat, the static member it replaces, whether it is new)."""
    member_id, epoch, instance_id = request.member_id, request.member_epoch, request.instance_id
    if instance_id is None:
        member = group.member(member_id)
        if member is None:
            if epoch != 0:
                raise unknown_member(group.group_id, member_id)
            return ConsumerGroupMember(member_id), None, True
        check_member_epoch(member, epoch, request.owned)
        return member, None, False
    existing = group.static_member(instance_id)
    if epoch == 0:
        if existing is None:
            member = group.member(member_id)
            return (member or ConsumerGroupMember(member_id)), None, member is None
        if existing.member_id == member_id:
            return existing, None, False
        if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise CoordinatorError(
                ErrorCode.unreleased_instance_id,
                f"Static member {member_id} with instance id {instance_id} cannot join the "
                f"group because the instance id is owned by {existing.member_id} member.")
        log.info("static member replaces its previous instance", group_id=group.group_id,
                 instance_id=instance_id, member_id=member_id, replaced=existing.member_id)
        timeline.note_removed(group.group_id, existing.member_id, timeline.REPLACED)
        return _replace_static(group, existing, member_id, out), existing, False
    if existing is None:
        raise CoordinatorError(ErrorCode.unknown_member_id,
                               f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise CoordinatorError(
            ErrorCode.fenced_instance_id,
            f"Static member {member_id} with instance id {instance_id} was fenced by member "
            f"{existing.member_id}.")
    check_member_epoch(existing, epoch, request.owned)
    return existing, None, False


def _updated(member: ConsumerGroupMember, request: HeartbeatRequest) -> ConsumerGroupMember:
    names = request.subscribed_topic_names
    return replace(
        member,
        instance_id=request.instance_id if request.instance_id is not None
        else member.instance_id,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
        else member.rebalance_timeout_ms,
        server_assignor=request.server_assignor if request.server_assignor is not None
        else member.server_assignor,
        subscribed_topic_names=interned_topic_names(names) if names is not None
        else member.subscribed_topic_names,
        subscribed_topic_regex=(request.subscribed_topic_regex or None)
        if request.subscribed_topic_regex is not None else member.subscribed_topic_regex,
        client_id=request.client_id, client_host=request.client_host,
        classic=request.classic if request.classic is not None else member.classic)


def heartbeat(shard: Any, now_ms: int, env: ConsumerGroupEnv,
              request: HeartbeatRequest) -> Result:
    if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
        return _leave(shard, env, request, now_ms)
    settings = env.settings
    existing = shard.groups.get(request.group_id)
    prefix: list[Record] = []
    completions: Sequence[tuple[Any, Any]] = ()
    if existing is None and request.member_epoch == 0:
        group = ConsumerGroup(request.group_id)  # materialised when its records replay
    elif request.member_epoch == 0 and not isinstance(existing, ConsumerGroup):
        # A classic group: replaced when empty, upgraded when the policy allows (migration).
        group, prefix, completions = upgrade(shard, env, existing, now_ms)
    else:
        group = consumer_group(shard, request.group_id)
    if len(group.members) >= settings.max_size and request.member_id not in group.members:
        raise CoordinatorError(
            ErrorCode.group_max_size_reached,
            f"The consumer group has reached its maximum capacity of {settings.max_size} "
            "members.")
    gid = group.group_id
    own = group_settings(shard, env, gid)
    out: list[Record] = list(prefix)
    effect = None

    # 1. The member, and the group epoch if the subscriptions changed.
    try:
        member, replaced, is_new = _member_for(group, request, out)
    except CoordinatorError as exc:
        if exc.code is ErrorCode.fenced_member_epoch:
            known = group.member(request.member_id)
            timeline.note_fenced(gid, request.member_id, request.member_epoch,
                                 -1 if known is None else known.member_epoch, now_ms)
        raise
    updated = _updated(member, request)
    if is_new or updated != member:
        out.append(records.member_metadata(gid, updated))
    #    Its client-side assignors (seed 003): a new list bumps the epoch, and the target waits
    #    for the assign timer, which sees the list.
    listed = client_selection.listed_change(group, updated.member_id, request.client_assignors) \
        if settings.client_assignors else []
    out += listed
    if is_new:
        log.info("member joins the consumer group", group_id=gid, member_id=updated.member_id,
                 instance_id=updated.instance_id)
    #    Regexes (consumer_regex): a new one is resolved, all of them once the refresh interval
    #    passed, in the background (the result bumps the group epoch if the topics changed);
    #    inline without an offloader, a changed resolution bumping the epoch now.
    gone = [m for m in (group.member(member.member_id), replaced) if m is not None]
    due = consumer_regex.refresh_due(group, now_ms, settings.regex_refresh_interval_ms)
    wanted = consumer_regex.regex_counts_after(group, gone, [updated])
    regex_effect = None
    if consumer_regex.offloads(env):
        regex_records, resolution = consumer_regex.known(group, wanted)
        if due or any(regex not in resolution for regex in wanted):
            regex_effect = start_resolution(shard, env, gid, now_ms)
    else:
        regex_records, resolution = consumer_regex.refresh(
            group, wanted, env.topics, now_ms, everything=due, rewrite=due)
    out += regex_records
    bump = group.group_epoch == 0 or bool(listed) or \
        updated.subscribed_topic_names != member.subscribed_topic_names or \
        updated.subscribed_topic_regex != member.subscribed_topic_regex or \
        resolution != consumer_regex.resolved_topics(group)
    group_epoch = group.group_epoch
    metadata: Mapping[str, SubscribedTopic] = group.subscription_metadata
    offload = offloaded(own, env)
    # A new group's first offloaded run waits a moment for more members (``pacing``); those
    # joining meanwhile are in it, at epoch 2, without a bump of their own.
    first_window = offload and settings.first_target_window_ms > 0 and \
        group.assignment_epoch == 0 and group.assignor_run is None
    if bump:
        metadata = subscription_after(group, gone, [updated], env, resolution)
        if metadata != group.subscription_metadata:
            out.append(records.subscription_metadata(gid, metadata.values()))
        if not (first_window and group.group_epoch == FIRST_GROUP_EPOCH):
            group_epoch = next_group_epoch(group)
            out.append(records.group_epoch(gid, group_epoch))
            log.info("bumped group epoch", group_id=gid, group_epoch=group_epoch)
            sensors.record_rebalance(gid)

    # 2. A new target assignment, if one is due and no run is in flight (seed 000): inline, or
    #    offloaded (the target stays as it is until the run's result is installed). When none
    #    starts now, the group's assign timer starts it as soon as it may (``pacing``).
    run_started = False
    target_of = replaced.member_id if replaced is not None else updated.member_id
    if first_window:
        quiet = settings.first_target_window_ms
        if group.group_epoch == 0:  # the first member: the group exists once records replay
            arm_assign_timer(shard, env, gid, now_ms + quiet)
        elif is_new:  # one more joins: the window stays open a little longer
            reschedule_assign_timer(shard, env, gid,
                                    pacing.window_close_at(shard, group, now_ms, quiet))
        else:
            arm_assign_timer(shard, env, gid, now_ms + quiet)  # armed already, normally
        target_epoch, target = group.effective_target(target_of)
    elif group.assignor_run is None and not listed and assignment_due(
            group, group_epoch, now_ms, own.assignment_interval_ms):
        members = dict(group.members)
        targets = dict(group.target)
        if replaced is not None:
            members.pop(replaced.member_id, None)
            targets[updated.member_id] = targets.pop(replaced.member_id, {})
        members[updated.member_id] = updated
        members = {mid: consumer_regex.with_regex_topics(m, resolution)
                   for mid, m in members.items()}
        run_records, effect, result = start_run(shard, env, group, group_epoch, members,
                                                 targets, metadata, now_ms, offload)
        out += run_records
        if result is None:
            run_started = True
            target_epoch, target = group.effective_target(target_of)
        else:
            target_epoch, target = result.epoch, result.assignments.get(updated.member_id, {})
    else:
        target_epoch, target = group.effective_target(target_of)
        if group_epoch > group.assignment_epoch and group.assignor_run is None:
            arm_assign_timer(shard, env, gid, pacing.next_run_at(
                group, now_ms, own.assignment_interval_ms))

    # 3. Reconciliation towards the target.
    reconciled = reconcile(updated, target_epoch, target, group.current_partition_epoch,
                           request.owned,
                           subscribed_ids(consumer_regex.with_regex_topics(updated, resolution),
                                          metadata))
    if is_new or reconciled != updated or replaced is not None:
        out.append(records.current_assignment(gid, reconciled, group.assignment_forms))
    if reconciled != updated:
        if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
            schedule_rebalance_timeout(shard, env, gid, reconciled, now_ms)
        else:
            shard.timers.cancel(rebalance_key(gid, reconciled.member_id))
    if replaced is not None:
        cancel_timers(shard, gid, replaced.member_id)
    schedule_session_timeout(shard, env, gid, reconciled.member_id, now_ms,
                             _classic_session_ms(reconciled))

    full = request.member_epoch == 0 or (
        request.rebalance_timeout_ms != -1 and request.owned is not None
        and (request.subscribed_topic_names is not None
             or request.subscribed_topic_regex is not None))
    changed = (reconciled.assigned_partitions is not member.assigned_partitions
               and reconciled.assigned_partitions != member.assigned_partitions)
    interval = own.heartbeat_interval_ms
    pending = group_epoch > target_epoch  # the target of the group's epoch is not out yet
    regex_pending = updated.subscribed_topic_regex is not None and \
        updated.subscribed_topic_regex not in resolution  # nor the member's regex resolved
    if pending or regex_pending or reconciled.state is MemberState.UNRELEASED_PARTITIONS:
        interval = pacing.heartbeat_interval(
            shard, group, reconciled.member_id, now_ms, interval, pending=pending,
            run_started=run_started,
            target_ms=now_ms if target_epoch > group.assignment_epoch else None,
            regex_pending=regex_pending)
    # The chosen member of a client-side computation is told, every heartbeat until it installs
    # (its time runs from the first: the assign timer checks it).
    deadline = None if group.client_computation is None else client_selection.notify(
        group, reconciled, now_ms, own.session_timeout_ms)
    if deadline is not None:
        arm_assign_timer_by(shard, env, gid, deadline)
    return Result(out, HeartbeatResponse(
        reconciled.member_id, reconciled.member_epoch, interval,
        reconciled.assigned_partitions if full or changed else None,
        should_compute_assignment=deadline is not None), completions,
        effect=_both(effect, regex_effect))


def _both(first: Any, second: Any) -> Any:
    """One effect running ``first`` then ``second`` (either may be None)."""
    if first is None or second is None:
        return first if second is None else second

    def effect() -> None:
        first()
        second()

    return effect


# ------------------------------------------------------------------------------ topic changes
def refresh_subscription_metadata(shard: Any, now_ms: int, env: ConsumerGroupEnv,
                                  topic_name: str) -> Result:
    """Bump the epoch of every group subscribed to ``topic_name`` whose subscription metadata
    changed (topic created, deleted, or partitions added), and of every group whose regexes
    resolve to other topics now."""
    out: list[Record] = []
    effect = None
    for group in list(shard.groups.values()):
        if not isinstance(group, ConsumerGroup) or not (
                group.subscribed_topic_counts.get(topic_name) or group.subscribed_regex_counts):
            continue
        if consumer_regex.offloads(env):  # the regexes again, in the background
            regex_records, resolution = consumer_regex.known(group, group.subscribed_regex_counts)
            if group.subscribed_regex_counts:
                effect = _both(effect, start_resolution(
                    shard, env, group.group_id, now_ms, stale=True))
        else:
            regex_records, resolution = consumer_regex.refresh(
                group, group.subscribed_regex_counts, env.topics, now_ms, everything=True)
        metadata = subscription_metadata(names_after(group, [], [], resolution), env,
                                         group.subscription_metadata)
        if metadata == group.subscription_metadata and not regex_records:
            continue
        out += regex_records
        if metadata != group.subscription_metadata:
            out.append(records.subscription_metadata(group.group_id, metadata.values()))
        epoch = next_group_epoch(group)
        out.append(records.group_epoch(group.group_id, epoch))
        log.info("bumped group epoch on a topic change", group_id=group.group_id,
                 group_epoch=epoch, topic=topic_name)
        sensors.record_rebalance(group.group_id)
        arm_after_bump(shard, env, group, now_ms)
    return Result(out, effect=effect)


