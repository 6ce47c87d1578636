"""ShareFetch and ShareAcknowledge on the group's coordinator partition: share sessions,
acknowledgements, acquisition of records, acquisition locks, and releasing a member's records.

Handlers are pure over the shard (``shard.share_partitions``, ``shard.share_sessions``): a
share partition is changed on a copy, the copy's changes are written as a ShareUpdate (or
ShareSnapshot) record, and the copy replaces the shard's partition once the record is written
(``_Staged``), so a failed write leaves the state as it was. Acquiring records writes nothing
(ACQUIRED is never persisted, as in Kafka); each acquisition arms a lock timer that releases
what is still held when it fires. Record data is read by the API layer after the event, from
the ranges the event acquired.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from coordinator.observability import sensors
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result
from coordinator.runtime.result import Record
from protocol import ErrorCode

from . import state_records
from .env import ShareGroupEnv, installed
from .partition import AcquiredRange, Changes, SharePartition
from .sessions import FINAL_EPOCH, INITIAL_EPOCH, ShareSession, TopicPartition, check, next_epoch
from .settings import GroupSettings, group_settings
from .waiting import AcquireBound, acquire_bound

log = get_logger("coordinator.groups.share")

AckBatch = tuple[int, int, tuple[int, ...]]
"""(first offset, last offset, acknowledge types): one type, or one per offset."""


@dataclass(frozen=True, slots=True)
class PartitionRequest:
    topic_id: uuid.UUID
    partition: int
    acks: tuple[AckBatch, ...] = ()
    ack_error: ErrorCode | None = None
    """Set by the API layer when the acknowledgement batches are malformed (INVALID_REQUEST)."""
    max_bytes: int | None = None
    """ShareFetch v0's PartitionMaxBytes (0: acknowledge only); None in v1."""


@dataclass(frozen=True, slots=True)
class FetchRequest:
    group_id: str
    member_id: str
    session_epoch: int
    max_records: int = 500
    batch_size: int = 500
    max_bytes: int = 2**31 - 1
    partitions: tuple[PartitionRequest, ...] = ()
    forgotten: tuple[TopicPartition, ...] = ()


@dataclass(slots=True)
class PartitionResult:
    topic_id: uuid.UUID
    partition: int
    topic_name: str | None = None
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    ack_error: ErrorCode | None = None
    """None when the request had no acknowledgements for the partition."""
    acquired: tuple[AcquiredRange, ...] = ()


@dataclass(slots=True)
class FetchResult:
    partitions: list[PartitionResult] = field(default_factory=list)
    lock_duration_ms: int = 0
    fetching: bool = True
    """False for a final request (epoch -1): nothing is fetched, only acknowledged."""

    def acquired(self) -> int:
        return sum(r.last_offset - r.first_offset + 1 for p in self.partitions
                   for r in p.acquired)


# ------------------------------------------------------------------------------ staging
class _Staged:
    """Share partitions changed by one event: copies of the shard's, installed (with the
    counters their records' replay gave the originals) once the event's records are written."""

    def __init__(self, shard: Any, env: ShareGroupEnv, group_id: str, now_ms: int) -> None:
        self.shard = shard
        self.env = env
        self.group_id = group_id
        self.now_ms = now_ms
        self.copies: dict[TopicPartition, SharePartition] = {}
        self.records: list[Record] = []
        self.released = False

    def get(self, tp: TopicPartition) -> SharePartition | None:
        work = self.copies.get(tp)
        if work is None:
            sp = self.shard.share_partitions.get(self.group_id, {}).get(tp)
            if sp is None:
                return None
            work = self.copies[tp] = sp.clone()
        return work

    def write(self, tp: TopicPartition, changes: Changes) -> None:
        if changes:
            work = self.copies[tp]
            self.records.append(state_records.state_record(
                self.group_id, tp[0], tp[1], work, changes, self.now_ms,
                self.env.settings.updates_per_snapshot))

    def effect(self) -> Callable[[], None] | None:
        if not self.copies:
            return None
        shard, group_id, copies = self.shard, self.group_id, dict(self.copies)
        released, wakeup = self.released, self.env.released

        def install() -> None:
            by_tp = shard.share_partitions.get(group_id)
            if by_tp is None:
                return  # the group's share state was deleted meanwhile
            for tp, work in copies.items():
                old = by_tp.get(tp)
                if old is None:
                    continue
                work.updates_since_snapshot = old.updates_since_snapshot
                work.snapshot_epoch = old.snapshot_epoch
                by_tp[tp] = work
            if released:
                wakeup.set()

        return install

    def result(self, response: Any) -> Result:
        return Result(self.records, response, effect=self.effect())


# ------------------------------------------------------------------------------ locks
def lock_key(group_id: str, tp: TopicPartition, acquisition_id: int) -> tuple[Any, ...]:
    return ("share-lock", group_id, tp[0], tp[1], acquisition_id)


def _arm_lock(shard: Any, env: ShareGroupEnv, group_id: str, tp: TopicPartition,
              acquisition_id: int, deadline_ms: int) -> None:
    def expire(shard: Any, now: int) -> Result:
        staged = _Staged(shard, env, group_id, now)
        work = staged.get(tp)
        if work is None or acquisition_id not in work.acquisitions:
            return Result()
        held = work.expired_count
        changes = work.expire(acquisition_id, now, group_settings(
            shard, env, group_id).delivery_count_limit)
        expired = work.expired_count - held
        if expired:
            staged.released = True
            sensors.record_share_lock_timeouts(expired)
            log.info("share records' acquisition lock expired", group_id=group_id,
                     topic_id=str(tp[0]), partition=tp[1], records=expired)
        staged.write(tp, changes)
        return staged.result(None)

    shard.timers.schedule(lock_key(group_id, tp, acquisition_id), deadline_ms, expire)


# ------------------------------------------------------------------------------ acknowledge
def _acknowledge(staged: _Staged, member_id: str, request: PartitionRequest,
                 result: PartitionResult, settings: GroupSettings) -> None:
    if request.ack_error is not None:
        result.ack_error = request.ack_error
        return
    if result.topic_name is None:
        result.ack_error = ErrorCode.unknown_topic_id
        return
    tp = (request.topic_id, request.partition)
    work = staged.get(tp)
    if work is None:
        result.ack_error = ErrorCode.unknown_topic_or_partition
        return
    error, changes = work.acknowledge(member_id, request.acks, settings.delivery_count_limit)
    result.ack_error = error
    if error is ErrorCode.none:
        for first, last, types in request.acks:
            sensors.record_share_acknowledgements(types, last - first + 1)
        if any(2 in types for _, _, types in request.acks):
            staged.released = True
        staged.write(tp, changes)
    else:
        log.info("share acknowledgement refused", group_id=staged.group_id,
                 member_id=member_id, topic_id=str(request.topic_id),
                 partition=request.partition, error=error.name)


# ------------------------------------------------------------------------------ acquire
def _acquire(staged: _Staged, env: ShareGroupEnv, request: FetchRequest,
             result: PartitionResult, settings: GroupSettings, budget: int,
             max_bytes: int, bound: AcquireBound | None = None) -> int:
    """Acquire up to ``budget`` records (in about ``max_bytes``, within ``bound`` while other
    members wait for their assignment) of one partition for the member; the number taken."""
    name = result.topic_name
    tp = (result.topic_id, result.partition)
    if name is None or result.error is not ErrorCode.none:
        return 0
    work = staged.get(tp)
    if work is None:
        result.error = ErrorCode.unknown_server_error
        result.error_message = "The share partition has no state for this group."
        return 0
    offsets = env.logs.offsets(name, result.partition)
    if offsets is None:
        result.error = ErrorCode.unknown_topic_or_partition
        return 0
    log_start, log_end = offsets
    if work.start_offset < 0:
        start = log_start if settings.auto_offset_reset == "earliest" else log_end
        staged.write(tp, work.resolve_start(start))
        log.info("share partition start offset resolved", group_id=staged.group_id,
                 topic=name, partition=result.partition, start_offset=start,
                 reset=settings.auto_offset_reset)
    elif log_start > work.start_offset:
        staged.write(tp, work.log_start_moved(log_start))
    strict = False
    if bound is not None:
        bounded = bound.records(tp, log_end - work.next_fetch_offset(), log_end, budget)
        strict, budget = bounded < budget, bounded
    if (budget <= 0 or max_bytes <= 0
            or not work.can_acquire(settings.partition_max_record_locks)):
        return 0
    batches = env.logs.batches(name, result.partition, work.next_fetch_offset(), budget,
                               max_bytes)
    if strict:  # the bound is exact, not rounded up to a batch's end
        clip = work.next_fetch_offset() + budget - 1
        batches = [(base, min(last, clip)) for base, last in batches if base <= clip]
    if not batches:
        return 0
    acquisition = work.acquire(request.member_id, batches, budget, request.batch_size,
                               settings.partition_max_record_locks, staged.now_ms,
                               settings.record_lock_duration_ms)
    if acquisition is None:
        return 0
    result.acquired = acquisition.ranges
    if bound is not None:
        bound.took(tp, acquisition.record_count)
    _arm_lock(staged.shard, env, staged.group_id, tp, acquisition.acquisition_id,
              acquisition.lock_deadline_ms)
    sensors.record_share_acquired(acquisition.record_count)
    return acquisition.record_count


def _topic_name(env: ShareGroupEnv, topic_id: uuid.UUID, partition: int
                ) -> tuple[str | None, ErrorCode]:
    topic = env.topics.topic_by_id(topic_id)
    if topic is None:
        return None, ErrorCode.unknown_topic_id
    if not 0 <= partition < topic.partitions:
        return topic.name, ErrorCode.unknown_topic_or_partition
    return topic.name, ErrorCode.none


# ------------------------------------------------------------------------------ ShareFetch
def _open_session(shard: Any, env: ShareGroupEnv, request: FetchRequest) -> ShareSession:
    key = (request.group_id, request.member_id)
    sessions = shard.share_sessions
    if any(p.acks for p in request.partitions):
        raise CoordinatorError(ErrorCode.invalid_request,
                               "Acknowledge data present in the initial share fetch request.")
    old = sessions.pop(key, None)
    if len(env.sessions) >= env.settings.max_share_sessions:
        raise CoordinatorError(ErrorCode.share_session_limit_reached,
                               "The limit of share sessions on this node is reached.")
    session = ShareSession(next_epoch(INITIAL_EPOCH))
    if old is not None:  # what the member took while others waited counts on
        session.waiting = old.waiting
    session.add((p.topic_id, p.partition) for p in request.partitions)
    sessions[key] = session
    env.sessions.add(session)
    return session


def close_session(shard: Any, env: ShareGroupEnv, group_id: str, member_id: str) -> None:
    session = shard.share_sessions.pop((group_id, member_id), None)
    if session is not None:
        env.sessions.discard(session)


def fetch(shard: Any, now_ms: int, env: ShareGroupEnv, request: FetchRequest) -> Result:
    """A ShareFetch: the session (open, continue or close), the acknowledgements it carries,
    then records acquired for the member from the session's partitions."""
    key = (request.group_id, request.member_id)
    settings = group_settings(shard, env, request.group_id)
    staged = _Staged(shard, env, request.group_id, now_ms)
    out = FetchResult(lock_duration_ms=settings.record_lock_duration_ms)
    full = request.session_epoch == INITIAL_EPOCH
    if full:
        session = _open_session(shard, env, request)
    else:
        session = check(shard.share_sessions, key, request.session_epoch)
    final = request.session_epoch == FINAL_EPOCH
    results: dict[TopicPartition, PartitionResult] = {}
    for p in request.partitions:
        name, error = _topic_name(env, p.topic_id, p.partition)
        result = PartitionResult(p.topic_id, p.partition, name, error)
        results[(p.topic_id, p.partition)] = result
        if p.acks or p.ack_error is not None:
            _acknowledge(staged, request.member_id, p, result, settings)
    if final:
        out.fetching = False
        out.partitions = [r for r in results.values() if r.ack_error is not None]
        _release(staged, request.member_id, settings.delivery_count_limit)
        close_session(shard, env, request.group_id, request.member_id)
        log.info("share session closed", group_id=request.group_id,
                 member_id=request.member_id)
        return staged.result(out)
    if not full:
        session.add((p.topic_id, p.partition) for p in request.partitions)
        session.forget(request.forgotten)
        session.epoch = next_epoch(request.session_epoch)
    session.max_bytes.update({(p.topic_id, p.partition): p.max_bytes
                              for p in request.partitions if p.max_bytes is not None})
    budget = request.max_records
    limits = session.byte_limits(request.max_bytes)
    bound = acquire_bound(shard, request.group_id, request.member_id, session.waiting)
    for tp in session.partitions:
        found = results.get(tp)
        if found is None:
            name, error = _topic_name(env, tp[0], tp[1])
            found = results[tp] = PartitionResult(tp[0], tp[1], name, error)
        budget -= _acquire(staged, env, request, found, settings, budget, limits[tp], bound)
    out.partitions = [r for tp, r in results.items()
                      if (tp in session.partitions and _answered(session, tp, r, full))
                      or r.ack_error is not None]
    for r in out.partitions:
        session.partitions[(r.topic_id, r.partition)] = False
    return staged.result(out)


def _answered(session: ShareSession, tp: TopicPartition, result: PartitionResult,
              full: bool) -> bool:
    """Whether the response names the partition: every one of a full session; of an
    incremental one those with records, errors or just added (Kafka's
    ``CachedSharePartition.maybeUpdateResponseData``)."""
    return (full or bool(result.acquired) or result.error is not ErrorCode.none
            or session.partitions.get(tp, False))


def acquire_more(shard: Any, now_ms: int, env: ShareGroupEnv, request: FetchRequest,
                 epoch: int) -> Result:
    """A waiting ShareFetch tries again (records were produced or released): acquisition only,
    from the session's partitions, while the session is the one the fetch left (at
    ``epoch``)."""
    session = shard.share_sessions.get((request.group_id, request.member_id))
    out = FetchResult()
    if session is None or session.epoch != epoch:
        return Result((), out)
    settings = group_settings(shard, env, request.group_id)
    out.lock_duration_ms = settings.record_lock_duration_ms
    staged = _Staged(shard, env, request.group_id, now_ms)
    budget = request.max_records
    limits = session.byte_limits(request.max_bytes)
    bound = acquire_bound(shard, request.group_id, request.member_id, session.waiting)
    for tp in session.partitions:
        name, error = _topic_name(env, tp[0], tp[1])
        result = PartitionResult(tp[0], tp[1], name, error)
        taken = _acquire(staged, env, request, result, settings, budget, limits[tp], bound)
        budget -= taken
        if taken:
            out.partitions.append(result)
    return staged.result(out)


# ------------------------------------------------------------------------------ ShareAcknowledge
def acknowledge(shard: Any, now_ms: int, env: ShareGroupEnv, request: FetchRequest) -> Result:
    """A ShareAcknowledge: epoch 0 is INVALID_SHARE_SESSION_EPOCH; otherwise the session's
    epoch (or -1: the session closes after the acknowledgements and the member's records are
    released)."""
    key = (request.group_id, request.member_id)
    log.debug("share acknowledge", group_id=request.group_id, member_id=request.member_id,
              share_session_epoch=request.session_epoch,
              batches=[(str(p.topic_id), p.partition, p.acks) for p in request.partitions])
    if request.session_epoch == INITIAL_EPOCH:
        raise CoordinatorError(ErrorCode.invalid_share_session_epoch,
                               "A share acknowledge request cannot open a share session.")
    session = check(shard.share_sessions, key, request.session_epoch)
    settings = group_settings(shard, env, request.group_id)
    staged = _Staged(shard, env, request.group_id, now_ms)
    out = FetchResult(lock_duration_ms=settings.record_lock_duration_ms, fetching=False)
    for p in request.partitions:
        name, error = _topic_name(env, p.topic_id, p.partition)
        result = PartitionResult(p.topic_id, p.partition, name, error)
        _acknowledge(staged, request.member_id, p, result, settings)
        out.partitions.append(result)
    if request.session_epoch == FINAL_EPOCH:
        _release(staged, request.member_id, settings.delivery_count_limit)
        close_session(shard, env, request.group_id, request.member_id)
        log.info("share session closed", group_id=request.group_id,
                 member_id=request.member_id)
        return staged.result(out)
    session.epoch = next_epoch(request.session_epoch)
    return staged.result(out)


# ------------------------------------------------------------------------------ release
def release_member_records(shard: Any, group_id: str, member_id: str, delivery_limit: int,
                           now_ms: int, env: ShareGroupEnv | None = None
                           ) -> tuple[list[Record], Callable[[], None] | None]:
    """Every record ``member_id`` holds acquired in the group's share partitions goes back
    (AVAILABLE, or ARCHIVED at the delivery limit): the records to write and the effect that
    installs the changed partitions."""
    staged = _Staged(shard, env or installed(), group_id, now_ms)
    _release(staged, member_id, delivery_limit)
    return staged.records, staged.effect()


def _release(staged: _Staged, member_id: str, delivery_limit: int) -> None:
    released = 0
    partitions = staged.shard.share_partitions.get(staged.group_id, {})
    for tp in list(partitions):
        work = staged.copies.get(tp) or partitions[tp]
        if not any(a.member_id == member_id for a in work.acquisitions.values()):
            continue
        work = staged.get(tp)
        assert work is not None
        held = work.acquired_count()
        staged.write(tp, work.release_member(member_id, delivery_limit))
        released += held - work.acquired_count()
    if released:
        staged.released = True
        log.info("released the member's acquired share records", group_id=staged.group_id,
                 member_id=member_id, records=released)


def partitions_in(requests: Sequence[PartitionRequest]) -> list[TopicPartition]:
    return [(p.topic_id, p.partition) for p in requests]
