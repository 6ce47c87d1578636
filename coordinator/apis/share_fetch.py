"""ShareFetch and ShareAcknowledge v0 (Kafka 4.0's early access) and v1 (KIP-932): requests
checked as Kafka checks them, the work done on the group's coordinator partition
(``groups.share.fetch``), record data read from the data plane for the ranges acquired.

v0 has no MaxRecords or BatchSize (Kafka 4.0 acquired whole batches up to the partition's
record-lock limit: so do we) and a PartitionMaxBytes per partition (0: acknowledge only); its
response has no AcquisitionLockTimeoutMs.

A ShareFetch that acquires nothing waits, up to ``MaxWaitMs``, for records to be produced or
released, then tries again (Kafka's delayed share fetch).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
import uuid
from dataclasses import replace
from typing import Any

from coordinator import topiclog
from coordinator.groups.share.env import ShareGroupEnv, env_for
from coordinator.groups.share.fetch import (
    FetchRequest,
    FetchResult,
    PartitionRequest,
    PartitionResult,
    acknowledge,
    acquire_more,
    fetch,
)
from coordinator.groups.share.heartbeat import MAX_MEMBER_ID_LENGTH
from coordinator.groups.share.partition import GAP, REJECT
from coordinator.groups.share.sessions import next_epoch
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from . import leadership
from .context import RequestContext

_ONE_MS = datetime.timedelta(milliseconds=1)

def _ack_batches(batches: Any) -> tuple[tuple[tuple[int, int, tuple[int, ...]], ...],
                                        ErrorCode | None]:
    """The batches, or INVALID_REQUEST when one is malformed (Kafka's
    ``validateAcknowledgementBatches``: ascending ranges, one type or one per offset, types
    0 to 3 in v1)."""
    out = []
    previous = -1
    for b in batches:
        types = tuple(int(t) for t in b.acknowledge_types)
        if (b.first_offset > b.last_offset or b.first_offset < previous or not types
                or (len(types) > 1 and len(types) != b.last_offset - b.first_offset + 1)
                or min(types) < GAP or max(types) > REJECT):
            return (), ErrorCode.invalid_request
        previous = b.last_offset
        out.append((b.first_offset, b.last_offset, types))
    return tuple(out), None


def _partitions(topics: Any) -> tuple[PartitionRequest, ...]:
    out = []
    for topic in topics:
        for p in topic.partitions:
            acks, error = _ack_batches(getattr(p, "acknowledgement_batches", ()))
            out.append(PartitionRequest(topic.topic_id, p.partition_index, acks, error,
                                        getattr(p, "partition_max_bytes", None)))
    return tuple(out)


def _invalid(request: Any) -> str | None:
    """Kafka's request checks before any work: the group id and member id."""
    if not request.group_id:
        return "Invalid group id in the request."
    member_id = request.member_id
    if not member_id or len(member_id) > MAX_MEMBER_ID_LENGTH:
        return "Invalid member id in the request."
    return None


_UNBOUNDED = 2**31 - 1


def _request(request: Any, fetching: bool) -> FetchRequest:
    return FetchRequest(
        group_id=request.group_id, member_id=request.member_id,
        session_epoch=request.share_session_epoch,
        max_records=max(0, getattr(request, "max_records", _UNBOUNDED)) if fetching else 0,
        batch_size=max(1, getattr(request, "batch_size", _UNBOUNDED)) if fetching else 1,
        max_bytes=getattr(request, "max_bytes", _UNBOUNDED),
        partitions=_partitions(request.topics),
        forgotten=tuple((t.topic_id, p) for t in getattr(request, "forgotten_topics_data", ())
                        for p in t.partitions))


async def _wait_for_records(ctx: RequestContext, env: ShareGroupEnv, remaining_s: float
                            ) -> None:
    """Until records are produced (any partition) or released, or ``remaining_s`` passed."""
    released = asyncio.ensure_future(env.released.event().wait())
    appended = asyncio.ensure_future(topiclog.of(ctx.broker).wait_for_append(remaining_s))
    try:
        await asyncio.wait({released, appended}, timeout=remaining_s,
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (released, appended):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(released, appended, return_exceptions=True)


def _unreadable(ctx: RequestContext, wanted: FetchRequest
                ) -> tuple[FetchRequest, list[PartitionResult]]:
    """The request without the partitions of topics the principal may not READ, and those
    partitions answered with TOPIC_AUTHORIZATION_FAILED (as Kafka's share fetch does)."""
    if ctx.broker.authorizer is None:
        return wanted, []
    image = ctx.broker.image
    names: dict[uuid.UUID, str] = {p.topic_id: t.name for p in wanted.partitions
                                   if (t := image.topic_by_id(p.topic_id)) is not None}
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC, names.values())
    denied = {topic_id for topic_id, name in names.items() if name not in readable}
    if not denied:
        return wanted, []
    kept = tuple(p for p in wanted.partitions if p.topic_id not in denied)
    refused = [PartitionResult(p.topic_id, p.partition, names[p.topic_id],
                               ErrorCode.topic_authorization_failed)
               for p in wanted.partitions if p.topic_id in denied]
    return replace(wanted, partitions=kept), refused


def _not_led(ctx: RequestContext, wanted: FetchRequest
             ) -> tuple[FetchRequest, list[PartitionResult]]:
    """With ``cluster.brokers`` > 1: the request without the partitions this broker does not
    lead, and those answered NOT_LEADER_OR_FOLLOWER (a share consumer fetches from each
    partition's leader, as a consumer does)."""
    if ctx.broker.cluster is None:
        return wanted, []
    image = ctx.broker.image
    kept, refused = [], []
    for p in wanted.partitions:
        topic = image.topic_by_id(p.topic_id)
        error = leadership.refusal(ctx, topic.name, p.partition) if topic is not None else None
        if error is None:
            kept.append(p)
        else:
            assert topic is not None
            refused.append(PartitionResult(p.topic_id, p.partition, topic.name, error))
    if not refused:
        return wanted, []
    return replace(wanted, partitions=tuple(kept)), refused


async def handle_fetch(ctx: RequestContext, request: Any) -> Any:
    problem = _invalid(request)
    if problem is not None:
        return _fetch_error(ctx, ErrorCode.invalid_request, problem)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _fetch_error(ctx, ErrorCode.group_authorization_failed, None)
    env: ShareGroupEnv = env_for(ctx.broker)
    wanted, refused = _unreadable(ctx, _request(request, True))
    wanted, not_led = _not_led(ctx, wanted)
    refused += not_led
    runtime = ctx.broker.runtime
    index = runtime.partition_for(wanted.group_id)
    deadline = time.monotonic() + max(0.0, request.max_wait / _ONE_MS / 1000.0)
    try:
        result: FetchResult = await runtime.write(
            index, lambda shard, now: fetch(shard, now, env, wanted), name="ShareFetch",
            group_id=wanted.group_id)
        epoch = next_epoch(wanted.session_epoch)
        while result.fetching and not result.acquired() and not _errors(result):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            await _wait_for_records(ctx, env, remaining)
            more: FetchResult = await runtime.write(
                index, lambda shard, now: acquire_more(shard, now, env, wanted, epoch),
                name="ShareFetch", group_id=wanted.group_id)
            _merge(result, more)
            if not more.lock_duration_ms:
                break  # the session was closed or replaced meanwhile
    except CoordinatorError as exc:
        return _fetch_error(ctx, exc.code, exc.message)
    result.partitions.extend(refused)
    return _fetch_response(ctx, env, result)


def _errors(result: FetchResult) -> bool:
    return any(p.error is not ErrorCode.none for p in result.partitions)


def _merge(result: FetchResult, more: FetchResult) -> None:
    by_tp = {(p.topic_id, p.partition): p for p in result.partitions}
    for p in more.partitions:
        known = by_tp.get((p.topic_id, p.partition))
        if known is None:
            result.partitions.append(p)
        else:
            known.acquired = known.acquired + p.acquired


def _leader(ctx: RequestContext, p: PartitionResult) -> Any:
    if ctx.broker.cluster is not None and p.topic_name is not None:
        return leadership.current_leader(ctx, p.topic_name, p.partition)
    return ctx.nested("LeaderIdAndEpoch", leader_id=ctx.broker.node_id, leader_epoch=0)


def _fetch_response(ctx: RequestContext, env: ShareGroupEnv, result: FetchResult) -> Any:
    topics: dict[Any, list[Any]] = {}
    for p in result.partitions:
        topics.setdefault(p.topic_id, []).append(_partition_data(ctx, env, p))
    return ctx.respond(
        error_code=ErrorCode.none, error_message=None,
        acquisition_lock_timeout=datetime.timedelta(milliseconds=result.lock_duration_ms),
        responses=tuple(ctx.nested("ShareFetchableTopicResponse", topic_id=topic_id,
                                   partitions=tuple(parts))
                        for topic_id, parts in topics.items()),
        node_endpoints=())


def _partition_data(ctx: RequestContext, env: ShareGroupEnv, p: PartitionResult) -> Any:
    records = b""
    if p.acquired and p.topic_name is not None:
        records = env.logs.read(p.topic_name, p.partition, p.acquired[0].first_offset,
                                p.acquired[-1].last_offset)
    return ctx.nested(
        "PartitionData", partition_index=p.partition, error_code=p.error,
        error_message=p.error_message,
        acknowledge_error_code=p.ack_error if p.ack_error is not None else ErrorCode.none,
        acknowledge_error_message=None, current_leader=_leader(ctx, p), records=records,
        acquired_records=tuple(
            ctx.nested("AcquiredRecords", first_offset=r.first_offset,
                       last_offset=r.last_offset, delivery_count=r.delivery_count)
            for r in p.acquired))


def _fetch_error(ctx: RequestContext, code: ErrorCode, message: str | None) -> Any:
    return ctx.respond(error_code=code, error_message=message,
                       acquisition_lock_timeout=datetime.timedelta(0), responses=(),
                       node_endpoints=())


async def handle_acknowledge(ctx: RequestContext, request: Any) -> Any:
    problem = _invalid(request)
    if problem is not None:
        return _acknowledge_error(ctx, ErrorCode.invalid_request, problem)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _acknowledge_error(ctx, ErrorCode.group_authorization_failed, None)
    env: ShareGroupEnv = env_for(ctx.broker)
    wanted, refused = _unreadable(ctx, _request(request, False))
    wanted, not_led = _not_led(ctx, wanted)
    refused += not_led
    runtime = ctx.broker.runtime
    try:
        result: FetchResult = await runtime.write(
            runtime.partition_for(wanted.group_id),
            lambda shard, now: acknowledge(shard, now, env, wanted), name="ShareAcknowledge",
            group_id=wanted.group_id)
    except CoordinatorError as exc:
        return _acknowledge_error(ctx, exc.code, exc.message)
    result.partitions.extend(refused)
    topics: dict[Any, list[Any]] = {}
    for p in result.partitions:
        error = p.error if p.error is not ErrorCode.none else (p.ack_error or ErrorCode.none)
        topics.setdefault(p.topic_id, []).append(ctx.nested(
            "PartitionData", partition_index=p.partition, error_code=error, error_message=None,
            current_leader=_leader(ctx, p)))
    return ctx.respond(
        error_code=ErrorCode.none, error_message=None,
        responses=tuple(ctx.nested("ShareAcknowledgeTopicResponse", topic_id=topic_id,
                                   partitions=tuple(parts))
                        for topic_id, parts in topics.items()),
        node_endpoints=())


def _acknowledge_error(ctx: RequestContext, code: ErrorCode, message: str | None) -> Any:
    return ctx.respond(error_code=code, error_message=message, responses=(),
                       node_endpoints=())

