"""Fetch (v4+, topic ids from v13): stored batches from each partition's fetch offset.

A fetch with less than ``min_bytes`` waits up to ``max_wait_ms`` and is woken by appends.
``max_bytes`` bounds the response and ``partition_max_bytes`` each partition; the first batch
found is returned whole even if it is larger (KIP-74). Sessions (KIP-227) are not kept: every
fetch is answered as a full, sessionless one with session id 0, which clients treat as "the
broker has no session for you" and keep sending full fetches. A read_committed fetch (isolation
level 1) gets batches below the last stable offset only, and the aborted transactions in them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from coordinator import topiclog
from coordinator.security.acl import AclOperation, ResourceType
from coordinator.topiclog import PartitionLog, TopicLogs
from coordinator.topiclog.internal import InternalPartitionLog
from protocol import ErrorCode

from . import leadership
from .context import RequestContext

INVALID_SESSION_ID = 0
_WAITS = (ErrorCode.none, ErrorCode.topic_authorization_failed)
FINAL_EPOCH = -1
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
INITIAL_EPOCH = 0


@dataclass(slots=True)
class Wanted:
    """One requested partition, resolved against the image."""

    topic_key: Any  # the name (v4-v12) or the topic id (v13+) the response echoes
    index: int
    fetch_offset: int
    partition_max_bytes: int
    plog: PartitionLog | InternalPartitionLog | None
    error: ErrorCode
    name: str | None = None
    """The topic's name, when its leadership was refused (``cluster.brokers`` > 1)."""


def _readable(ctx: RequestContext, request: Any) -> set[str] | None:
    """The requested topics the principal may READ (None: no authorizer, all of them)."""
    if ctx.broker.authorizer is None:
        return None
    if ctx.version >= 13:
        image = ctx.broker.image
        names = [t.name for f in request.topics
                 if f.topic_id is not None and (t := image.topic_by_id(f.topic_id))]
    else:
        names = [f.topic for f in request.topics]
    return ctx.authorized(AclOperation.READ, ResourceType.TOPIC, names)


def _resolve(ctx: RequestContext, logs: TopicLogs, request: Any,
             readable: set[str] | None = None) -> list[Wanted]:
    """Each requested partition; a topic not in ``readable`` (when given) gets
    TOPIC_AUTHORIZATION_FAILED (after UNKNOWN_TOPIC_ID for an unknown id, as Kafka)."""
    by_id = ctx.version >= 13
    cluster = ctx.broker.cluster
    wanted: list[Wanted] = []
    for fetch_topic in request.topics:
        if by_id:
            key: Any = fetch_topic.topic_id
            topic = ctx.broker.image.topic_by_id(key) if key is not None else None
            missing = ErrorCode.unknown_topic_id
        else:
            key = fetch_topic.topic
            topic = ctx.broker.image.topic(key)
            missing = ErrorCode.unknown_topic_or_partition
        denied = readable is not None and (topic.name if topic is not None else key) \
            not in readable and not (by_id and topic is None)
        for p in fetch_topic.partitions:
            plog = logs.readable(topic.name, p.partition) if topic is not None else None
            if denied:
                plog, error = None, ErrorCode.topic_authorization_failed
            elif topic is None:
                error = missing
            elif plog is None:
                error = logs.unreadable(topic.name, p.partition)
            elif cluster is not None and not topic.is_internal and (
                    refused := leadership.refusal(ctx, topic.name, p.partition,
                                                  getattr(p, "current_leader_epoch", -1))
            ) is not None:
                wanted.append(Wanted(key, p.partition, p.fetch_offset, p.partition_max_bytes,
                                     None, refused, topic.name))
                continue
            elif not plog.log_start_offset <= p.fetch_offset <= plog.log_end_offset:
                error = ErrorCode.offset_out_of_range
            else:
                error = ErrorCode.none
            wanted.append(Wanted(key, p.partition, p.fetch_offset, p.partition_max_bytes,
                                 plog, error))
    return wanted


def _read(wanted: list[Wanted], max_bytes: int, committed: bool = False
          ) -> tuple[list[bytes], int]:
    remaining = max_bytes
    first = True
    out: list[bytes] = []
    for w in wanted:
        data = b""
        if w.error is ErrorCode.none and w.plog is not None:
            limit = min(w.partition_max_bytes, remaining)
            data = w.plog.read(w.fetch_offset, limit, min_one=first,
                               max_offset=w.plog.last_stable_offset if committed else None)
            if data:
                first = False
                remaining = max(0, remaining - len(data))
        out.append(data)
    return out, sum(len(d) for d in out)


async def handle(ctx: RequestContext, request: Any) -> Any:
    logs = topiclog.of(ctx.broker)
    session_id = getattr(request, "session_id", INVALID_SESSION_ID)
    session_epoch = getattr(request, "session_epoch", FINAL_EPOCH)
    if session_id != INVALID_SESSION_ID and session_epoch != FINAL_EPOCH:
        return ctx.respond(error_code=ErrorCode.fetch_session_id_not_found, responses=(),
                           session_id=INVALID_SESSION_ID)
    if session_id == INVALID_SESSION_ID and session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        return ctx.respond(error_code=ErrorCode.invalid_fetch_session_epoch, responses=(),
                           session_id=INVALID_SESSION_ID)
    max_wait_s = max(0.0, request.max_wait.total_seconds())
    deadline = time.monotonic() + max_wait_s
    readable = _readable(ctx, request)
    committed = getattr(request, "isolation_level", READ_UNCOMMITTED) == READ_COMMITTED
    while True:
        wanted = _resolve(ctx, logs, request, readable)
        records, total = _read(wanted, request.max_bytes, committed)
        # as Kafka: refused partitions are answered beside the others, which may still wait
        errors = any(w.error not in _WAITS for w in wanted)
        remaining = deadline - time.monotonic()
        if total >= request.min_bytes or errors or remaining <= 0 \
                or all(w.error is not ErrorCode.none for w in wanted):
            break
        internal = any(isinstance(w.plog, InternalPartitionLog) for w in wanted)
        if not await logs.wait_for_append(remaining, internal):
            wanted = _resolve(ctx, logs, request, readable)
            records, total = _read(wanted, request.max_bytes, committed)
            break
    return _response(ctx, wanted, records, committed)


def _aborted(ctx: RequestContext, w: Wanted, data: bytes, committed: bool) -> Any:
    """A read_committed partition's aborted transactions in the range it returns (None for
    read_uncommitted, as Kafka)."""
    if not committed:
        return None
    if w.plog is None or not data:
        return ()
    return tuple(ctx.nested("AbortedTransaction", producer_id=txn.producer_id,
                            first_offset=txn.first_offset)
                 for txn in w.plog.transactions.aborted_between(
                     w.fetch_offset, w.plog.last_stable_offset))


def _response(ctx: RequestContext, wanted: list[Wanted], records: list[bytes],
              committed: bool = False) -> Any:
    topics: list[tuple[Any, list[Any]]] = []
    leaders: list[int] = []  # of the partitions refused for their leadership (KIP-951)
    for w, data in zip(wanted, records, strict=True):
        if not topics or topics[-1][0] != w.topic_key:
            topics.append((w.topic_key, []))
        plog = w.plog
        hw = plog.high_watermark if plog is not None else -1
        fields: dict[str, Any] = {}
        if w.name is not None:
            fields["current_leader"] = leader = leadership.current_leader(ctx, w.name, w.index)
            leaders.append(leader.leader_id)
        topics[-1][1].append(ctx.nested(
            "PartitionData", partition_index=w.index, error_code=w.error, high_watermark=hw,
            last_stable_offset=plog.last_stable_offset if plog is not None else -1,
            log_start_offset=plog.log_start_offset if plog else -1,
            aborted_transactions=_aborted(ctx, w, data, committed), preferred_read_replica=-1,
            records=data, **fields))
    key = "topic_id" if ctx.version >= 13 else "topic"
    responses = tuple(
        ctx.nested("FetchableTopicResponse", **{key: topic_key}, partitions=tuple(parts))
        for topic_key, parts in topics)
    if leaders:
        return ctx.respond(error_code=ErrorCode.none, session_id=INVALID_SESSION_ID,
                           responses=responses,
                           node_endpoints=leadership.node_endpoints(ctx, leaders))
    return ctx.respond(error_code=ErrorCode.none, session_id=INVALID_SESSION_ID,
                       responses=responses)

