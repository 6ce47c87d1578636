"""StreamsGroupHeartbeat (KIP-1071): the pure handler, member fencing and the timers.

The steps are Kafka 4.3's (``GroupMetadataManager.streamsGroupHeartbeat``): get or create the
group and the member (validating its epoch), update the member, store the first topology,
configure it against the metadata (which topics are missing, how many partitions the internal
topics need), bump the group epoch when anything the assignment depends on changed, hold the
first assignment for ``group.streams.initial.rebalance.delay.ms``, compute a new target when
due (seed 000's interval; inline or offloaded), reconcile the member towards it (revocation
before assignment, a task never active on two members at once), re-arm its session timeout,
and answer with the statuses (STALE_TOPOLOGY, ASSIGNMENT_DELAYED, the topic status,
SHUTDOWN_APPLICATION), the tasks when they changed, and the endpoints when the member's view of
them is old.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from coordinator.groups.classic.model import ClassicGroup, ClassicGroupState
from coordinator.groups.modern import members as member_rules
from coordinator.groups.modern.heartbeat import MemberRequest
from coordinator.groups.modern.members import invalid, known_member, note_leaving, unknown_member
from coordinator.groups.modern.target import offloaded
from coordinator.observability import sensors, timeline
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result
from coordinator.runtime.result import Record
from protocol import ErrorCode

from . import imbalance, records
from .endpoints import EndpointPartitions, partitions_by_endpoint
from .env import StreamsGroupEnv, group_settings, installed
from .model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Endpoint,
    MemberState,
    StreamsGroup,
    StreamsGroupMember,
    Tasks,
    TasksTuple,
)
from .reconcile import is_owned_subset, reconcile
from .target import (
    IN_FLIGHT_DETAIL,
    INITIAL_DELAY_DETAIL,
    INTERVAL_DETAIL,
    NUM_STANDBY_REPLICAS,
    compute_inline,
    interval_allows,
    prepare,
    start_effect,
    target_of,
)
from .topology import (
    InternalTopic,
    Topology,
    configure,
    metadata_hash,
    validate_changelog_partitions,
)

log = get_logger("coordinator.groups.streams")

STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5

Status = tuple[int, str]


@dataclass(frozen=True, slots=True)
class HeartbeatRequest(MemberRequest):
    endpoint_information_epoch: int = -1
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    active_tasks: Tasks | None = None
    standby_tasks: Tasks | None = None
    warmup_tasks: Tasks | None = None
    process_id: str | None = None
    user_endpoint: Endpoint | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
    task_offsets: bool = False
    """Whether TaskOffsets was sent (4.3 refuses it)."""
    task_end_offsets: bool = False
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""

    def owned(self) -> TasksTuple | None:
        """The tasks the member says it owns, or None when it did not say."""
        if self.active_tasks is None:
            return None
        return TasksTuple(self.active_tasks, self.standby_tasks or {}, self.warmup_tasks or {})


@dataclass(slots=True)
class HeartbeatResponse:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int = 0
    statuses: list[Status] = field(default_factory=list)
    tasks: TasksTuple | None = None
    endpoint_information_epoch: int = 0
    endpoints: list[EndpointPartitions] | None = None
    internal_topics: tuple[InternalTopic, ...] = ()
    """Internal topics to create (MISSING_INTERNAL_TOPICS): the API layer creates them."""


def validate(request: HeartbeatRequest) -> None:
    """Kafka 4.3's request checks before the group is touched (INVALID_REQUEST for what it does
    not support yet and for malformed requests)."""
    if request.instance_id is not None:
        raise invalid("Static membership is not yet supported.")
    if request.task_offsets:
        raise invalid("TaskOffsets are not supported yet.")
    if request.task_end_offsets:
        raise invalid("TaskEndOffsets are not supported yet.")
    if request.warmup_tasks:
        raise invalid("WarmupTasks are not supported yet.")
    if request.topology is not None and any(
            s.source_topic_regex for s in request.topology.subtopologies):
        raise invalid("Regular expressions for source topics are not supported yet.")
    if not request.member_id.strip():
        raise invalid("MemberId can't be empty.")
    if not request.group_id.strip():
        raise invalid("GroupId can't be empty.")
    if request.rack_id is not None and not request.rack_id.strip():
        raise invalid("RackId can't be empty.")
    epoch = request.member_epoch
    lists = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        for name, tasks in zip(("ActiveTasks", "StandbyTasks", "WarmupTasks"), lists,
                               strict=True):
            if tasks is None or tasks:
                raise invalid(f"{name} must be empty when (re-)joining.")
        if request.topology is None:
            raise invalid("Topology must be non-null when (re-)joining.")
        # GCS.throwIfInvalidTopology: STREAMS_INVALID_TOPOLOGY, checked here in Kafka's order
        validate_changelog_partitions(request.topology)
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
    if any(t is None for t in lists) and not all(t is None for t in lists):
        raise invalid("If one task-type is non-null, all must be non-null.")
    if epoch != 0 and request.topology is not None:
        raise invalid("Topology can only be provided when (re-)joining.")


# ------------------------------------------------------------------------------ lookups
def streams_group(shard: Any, group_id: str) -> StreamsGroup:
    """The streams group, or GROUP_ID_NOT_FOUND (also when the id is another type's group)."""
    return member_rules.group_of(shard, group_id, StreamsGroup, "streams")


def check_member_epoch(member: StreamsGroupMember, request: HeartbeatRequest) -> None:
    member_rules.check_member_epoch(
        "streams", request.member_epoch, member.member_epoch, member.previous_member_epoch,
        lambda: is_owned_subset(request.owned(), member.assigned))


# ------------------------------------------------------------------------------ timers
def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return member_rules.session_key("streams", group_id, member_id)


def rebalance_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return member_rules.rebalance_key("streams", group_id, member_id)


def initial_delay_key(group_id: str) -> tuple[str, str]:
    return ("streams-initial-rebalance", group_id)


def schedule_session_timeout(shard: Any, env: StreamsGroupEnv, group_id: str, member_id: str,
                             now_ms: int) -> None:
    timeout = group_settings(shard, env, group_id).session_timeout_ms
    member_rules.schedule_session_timeout(
        shard, "streams", StreamsGroup, group_id, member_id, now_ms + timeout,
        lambda shard, group, member, now: remove_member(shard, group, member, now,
                                                        reason=timeline.SESSION_EXPIRED))


def schedule_rebalance_timeout(shard: Any, group_id: str, member: StreamsGroupMember,
                               now_ms: int) -> None:
    epoch = member.member_epoch
    timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else 300000
    member_rules.schedule_expiry(
        shard, rebalance_key(group_id, member.member_id), now_ms + timeout, StreamsGroup,
        group_id, member.member_id, timeline.REBALANCE_TIMEOUT,
        "streams group member did not revoke its tasks within its rebalance timeout",
        lambda shard, group, member, now: remove_member(shard, group, member, now,
                                                        reason=timeline.REBALANCE_TIMEOUT),
        lambda current: current.member_epoch == epoch
        and current.state is MemberState.UNREVOKED_TASKS)


def _schedule_initial_delay(shard: Any, env: StreamsGroupEnv, group_id: str, now_ms: int,
                            delay_ms: int) -> None:
    """Kafka's initial rebalance delay: the first target of a group that had no members is
    computed ``delay_ms`` after the first member came, for every member that came by then."""
    key = initial_delay_key(group_id)
    if shard.timers.is_scheduled(key):
        return

    def fire(shard: Any, now: int) -> Result:
        group = shard.groups.get(group_id)
        if not isinstance(group, StreamsGroup) or not group.members:
            return Result()
        if group.configured is None:
            log.warning("initial rebalance delay ended without a configured topology",
                        group_id=group_id)
            return Result()
        settings = group_settings(shard, env, group_id)
        prepared = prepare(group, group.group_epoch, group.members, group.configured,
                           _standby(group.assignment_configs))
        policy = imbalance.policy(shard, env, group)
        if offloaded(settings, env) and policy is None:
            return Result(effect=start_effect(shard, group_id, prepared, env.offloader))
        _, out = compute_inline(
            group, prepared, group.members, now, policy,
            lambda epoch: records.group_metadata(group, epoch, group.metadata_hash,
                                                 group.validated_topology_epoch,
                                                 group.assignment_configs))
        return Result(out)

    shard.timers.schedule(key, now_ms + delay_ms, fire)


def cancel_timers(shard: Any, group_id: str, member_id: str) -> None:
    member_rules.cancel_timers(shard, "streams", group_id, member_id)


def rearm_on_load(shard: Any, now_ms: int) -> None:
    env = installed()

    def rearm(group: StreamsGroup, member: StreamsGroupMember) -> None:
        schedule_session_timeout(shard, env, group.group_id, member.member_id, now_ms)
        if member.state is MemberState.UNREVOKED_TASKS:
            schedule_rebalance_timeout(shard, group.group_id, member, now_ms)

    member_rules.rearm_members(shard, StreamsGroup, rearm)


def _standby(configs: tuple[tuple[str, str], ...]) -> int:
    for key, value in configs:
        if key == NUM_STANDBY_REPLICAS:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


# ------------------------------------------------------------------------------ fencing
def remove_member(shard: Any, group: StreamsGroup, member: StreamsGroupMember, now_ms: int,
                  response: Any = None, reason: str = timeline.LEFT) -> Result:
    """``member`` leaves or is fenced (why: ``reason``): its records go, its active tasks are
    held under deferred resolution (``imbalance``), and the group epoch is bumped (no new target
    now: the next heartbeat of any member computes it)."""
    gid, mid = group.group_id, member.member_id
    out: list[Record] = records.member_tombstones(gid, mid)
    out += imbalance.hold_removed(shard, group, member, now_ms, reason)
    out.append(records.group_metadata(group, group.group_epoch + 1, group.metadata_hash,
                                      group.validated_topology_epoch,
                                      group.assignment_configs))
    log.info("bumped group epoch", group_id=gid, group_epoch=group.group_epoch + 1,
             reason="member removed", member_id=mid)
    cancel_timers(shard, gid, mid)

    def effect() -> None:
        current = shard.groups.get(gid)
        if isinstance(current, StreamsGroup) and not current.members:
            current.shutdown_requested_by = None

    return Result(out, response, effect=effect)


def _leave(shard: Any, request: HeartbeatRequest, now_ms: int) -> Result:
    if shard.groups.get(request.group_id) is None:
        # GMM.streamsGroupLeave looks the group up with streamsGroup(groupId), whose message
        # for an absent group is not the heartbeat's "Streams group %s not found."
        raise CoordinatorError(ErrorCode.group_id_not_found,
                               f"Group {request.group_id} not found.")
    group = streams_group(shard, request.group_id)
    if request.shutdown_application and group.shutdown_requested_by is None:
        group.shutdown_requested_by = request.member_id
    member = known_member(group, request.member_id)
    note_leaving(log, "streams", group, member, now_ms)
    return remove_member(shard, group, member, now_ms,
                         HeartbeatResponse(request.member_id, request.member_epoch))


# ------------------------------------------------------------------------------ heartbeat
def _group_for(shard: Any, env: StreamsGroupEnv, request: HeartbeatRequest
               ) -> tuple[StreamsGroup, list[Record], bool]:
    """(the group, records replacing an empty classic group, whether it is new)."""
    existing = shard.groups.get(request.group_id)
    if request.member_epoch != 0:
        return streams_group(shard, request.group_id), [], False
    prefix: list[Record]
    if isinstance(existing, StreamsGroup):
        group, prefix, new = existing, [], False
    elif existing is None:
        group, prefix, new = StreamsGroup(request.group_id), [], True
    elif isinstance(existing, ClassicGroup) and existing.state is ClassicGroupState.EMPTY:
        group, prefix, new = StreamsGroup(request.group_id), [existing.tombstone()], True
    else:
        raise CoordinatorError(ErrorCode.group_id_not_found,
                               f"Group {request.group_id} is not a streams group.")
    max_size = env.settings.max_size
    if len(group.members) >= max_size:
        raise CoordinatorError(
            ErrorCode.group_max_size_reached,
            f"The streams group has reached its maximum capacity of {max_size} members.")
    return group, prefix, new


def _updated(member: StreamsGroupMember, request: HeartbeatRequest) -> StreamsGroupMember:
    return replace(
        member,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
        else member.rebalance_timeout_ms,
        topology_epoch=request.topology.epoch if request.topology is not None
        else member.topology_epoch,
        client_id=request.client_id, client_host=request.client_host,
        process_id=request.process_id if request.process_id is not None
        else member.process_id,
        client_tags=tuple(sorted(request.client_tags)) if request.client_tags is not None
        else member.client_tags,
        user_endpoint=request.user_endpoint if request.user_endpoint is not None
        else member.user_endpoint)


def _check_tasks(request: HeartbeatRequest, configured: Any) -> None:
    """With a configured topology, the tasks a member says it owns must exist."""
    for tasks in (request.active_tasks, request.standby_tasks, request.warmup_tasks):
        for subtopology, partitions in (tasks or {}).items():
            sub = configured.subtopologies.get(subtopology)
            if sub is None:
                raise invalid(f"Subtopology {subtopology} does not exist in the topology.")
            for p in sorted(partitions):
                if not 0 <= p < sub.num_tasks:
                    raise invalid(f"Task {p} for subtopology {subtopology} is invalid. Number "
                                   f"of tasks for this subtopology: {sub.num_tasks}")


def heartbeat(shard: Any, now_ms: int, env: StreamsGroupEnv, request: HeartbeatRequest
              ) -> Result:
    if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
        return _leave(shard, request, now_ms)
    group, out, is_new_group = _group_for(shard, env, request)
    gid = group.group_id
    own = group_settings(shard, env, gid)
    was_empty = not group.members
    effects: list[Callable[[], None]] = []

    # 1. The member and its metadata.
    member = group.member(request.member_id)
    if member is None:
        if request.member_epoch != 0:
            raise unknown_member(gid, request.member_id)
        member = StreamsGroupMember(request.member_id)
        is_new = True
    else:
        check_member_epoch(member, request)
        is_new = False
    updated = _updated(member, request)
    bump = False
    if is_new or updated.metadata() != member.metadata():
        out.append(records.member_metadata(gid, updated))
        bump = True
    if is_new:
        log.info("member joins the streams group", group_id=gid, member_id=updated.member_id,
                 process_id=updated.process_id)

    # 2. The topology: the first one is stored; a member behind it is stale; no updates.
    topology = group.topology
    if request.topology is not None:
        if topology is None:
            topology = request.topology
            out.append(records.topology(gid, topology))
            bump = True
        elif topology.epoch <= request.topology.epoch and request.topology != topology:
            raise invalid("Topology updates are not supported yet.")
    statuses: list[Status] = []
    if topology is not None and updated.topology_epoch < topology.epoch:
        statuses.append((STALE_TOPOLOGY, f"The member's topology epoch {updated.topology_epoch} "
                                         f"is behind the group's topology epoch "
                                         f"{topology.epoch}."))

    # 3. The topology against the metadata (a topic it needs changed, or none configured yet).
    configured = group.configured
    metadata = group.metadata_hash
    if topology is not None and (configured is None or group.metadata_expired
                                 or topology is not group.topology):
        configured = configure(topology, env.topics)  # STREAMS_INVALID_TOPOLOGY raised
        metadata = metadata_hash(topology, env.topics)
        if metadata != group.metadata_hash:
            bump = True
    validated = topology.epoch if configured is not None and configured.is_ready else -1
    if configured is not None and configured.is_ready:
        _check_tasks(request, configured)
    if validated != group.validated_topology_epoch:
        bump = True
    configs = ((NUM_STANDBY_REPLICAS, str(own.num_standby_replicas)),)
    if configs != group.assignment_configs:
        bump = True
    group_epoch = group.group_epoch
    if bump:
        group_epoch += 1
        out.append(records.group_metadata(group, group_epoch, metadata, validated, configs))
        log.info("bumped group epoch", group_id=gid, group_epoch=group_epoch)
        sensors.record_streams_rebalance(gid)

    # 4. The target: held during the initial delay, batched by the interval, maybe offloaded.
    members: dict[str, StreamsGroupMember] = dict(group.members)
    members[updated.member_id] = updated
    target_epoch, target = group.assignment_epoch, group.target_of(updated.member_id)
    delayed: str | None = None
    if was_empty and own.initial_rebalance_delay_ms > 0:
        _schedule_initial_delay(shard, env, gid, now_ms, own.initial_rebalance_delay_ms)
    if shard.timers.is_scheduled(initial_delay_key(gid)):
        delayed = INITIAL_DELAY_DETAIL
        target = TasksTuple()
    elif group.assignment_epoch < group_epoch:
        if group.assignor_run is not None:
            delayed = IN_FLIGHT_DETAIL
        elif not interval_allows(group, now_ms, own.assignment_interval_ms):
            delayed = INTERVAL_DETAIL
        else:
            prepared = prepare(group, group_epoch, members, configured,
                               own.num_standby_replicas)
            policy = imbalance.policy(shard, env, group)  # inline when on (``imbalance``)
            if offloaded(own, env) and policy is None:
                effects.append(start_effect(shard, gid, prepared, env.offloader))
                delayed = IN_FLIGHT_DETAIL
                log.info("offloaded target assignment", group_id=gid, group_epoch=group_epoch,
                         members=len(members))
            else:
                new, target_records = compute_inline(
                    group, prepared, members, now_ms, policy,
                    lambda epoch: records.group_metadata(group, epoch, metadata, validated,
                                                         configs))
                out += target_records
                target_epoch, target = group_epoch, target_of(group, new, updated.member_id)
    if delayed is not None:
        statuses.append((ASSIGNMENT_DELAYED, delayed))

    # 5. Reconciliation towards the target.
    reconciled = reconcile(updated, target_epoch, target, group, request.owned())
    if is_new or reconciled != updated:
        out.append(records.current_assignment(gid, reconciled))
    if reconciled.state is MemberState.UNREVOKED_TASKS:
        if reconciled != updated:
            schedule_rebalance_timeout(shard, gid, reconciled, now_ms)
    else:
        shard.timers.cancel(rebalance_key(gid, reconciled.member_id))
    schedule_session_timeout(shard, env, gid, reconciled.member_id, now_ms)

    # 6. The answer: statuses, tasks when they changed, endpoints when the member's are old.
    if configured is not None and configured.status is not None:
        statuses.append(configured.status)
    shutdown_by = group.shutdown_requested_by
    if request.shutdown_application and shutdown_by is None:
        shutdown_by = request.member_id
    if shutdown_by is not None:
        statuses.append((SHUTDOWN_APPLICATION, f"Streams group member {shutdown_by} "
                                               "encountered a fatal error and requested a "
                                               "shutdown for the entire application."))
    tasks_changed = request.member_epoch == 0 or not (
        reconciled.assigned.same_tasks(member.assigned)
        and reconciled.assigned.epochs == member.assigned.epochs)
    endpoint_epoch = 0 if is_new_group else group.endpoint_epoch
    if tasks_changed and reconciled.user_endpoint is not None and not is_new_group:
        endpoint_epoch += 1
    endpoints = None
    if endpoint_epoch != request.endpoint_information_epoch:
        members[reconciled.member_id] = reconciled
        others = [m for mid, m in sorted(members.items()) if mid != reconciled.member_id]
        endpoints = partitions_by_endpoint([*others, reconciled], configured)
    response = HeartbeatResponse(
        reconciled.member_id, reconciled.member_epoch, own.heartbeat_interval_ms, statuses,
        reconciled.assigned if tasks_changed else None, endpoint_epoch, endpoints,
        configured.internal_topics_to_create if configured is not None else ())

    def remember() -> None:
        current = shard.groups.get(gid)
        if not isinstance(current, StreamsGroup):
            return
        current.configured = configured
        current.metadata_expired = False
        current.endpoint_epoch = endpoint_epoch
        if shutdown_by is not None and current.shutdown_requested_by is None:
            current.shutdown_requested_by = shutdown_by

    effects.insert(0, remember)
    return Result(out, response, effect=_all(effects))


def _all(effects: list[Callable[[], None]]) -> Callable[[], None]:
    def run() -> None:
        for effect in effects:
            effect()

    return run


# ------------------------------------------------------------------------------ topic changes
def refresh_subscription_metadata(shard: Any, now_ms: int, env: StreamsGroupEnv,
                                  topic_name: str) -> Result:
    """A topic a streams group needs was created, deleted or grew: its topology is configured
    again on the next heartbeat of any member (Kafka bumps lazily, then)."""
    for group in list(shard.groups.values()):
        if isinstance(group, StreamsGroup) and group.topology is not None and (
                topic_name in group.topology.required_topics()):
            group.metadata_expired = True
    return Result()

