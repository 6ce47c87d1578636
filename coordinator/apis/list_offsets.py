"""ListOffsets (v1+): earliest (-2), latest (-1), max timestamp (-3, v7+), or the first offset
whose timestamp is at or after a given one."""

from __future__ import annotations

from typing import Any

from coordinator import topiclog
from coordinator.metadata.image import TopicImage
from coordinator.security.acl import AclOperation
from coordinator.topiclog import PartitionLog
from coordinator.topiclog.internal import InternalPartitionLog
from coordinator.topiclog.partition import LEADER_EPOCH
from protocol import ErrorCode

from . import leadership
from .context import RequestContext
from .partition_answers import answer_partitions

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
EARLIEST_PENDING_UPLOAD = -5
NO_TIMESTAMP = -1


def _lookup(plog: PartitionLog | InternalPartitionLog, target: int, committed: bool = False
            ) -> tuple[int, int]:
    """(timestamp, offset) for a target timestamp; (-1, -1) when no record qualifies. Latest
    is the last stable offset for read_committed (isolation level 1)."""
    if target == LATEST:
        return NO_TIMESTAMP, plog.last_stable_offset if committed else plog.high_watermark
    if target in (EARLIEST, EARLIEST_LOCAL):
        return NO_TIMESTAMP, plog.log_start_offset
    if target == MAX_TIMESTAMP:
        return plog.max_timestamp() or (NO_TIMESTAMP, -1)
    if target < 0:  # EARLIEST_PENDING_UPLOAD and others: no tiered storage here
        return NO_TIMESTAMP, -1
    return plog.offset_for_timestamp(target) or (NO_TIMESTAMP, -1)


def handle(ctx: RequestContext, request: Any) -> Any:
    logs = topiclog.of(ctx.broker)
    committed = getattr(request, "isolation_level", 0) == 1
    cluster = ctx.broker.cluster

    def response(index: int, code: ErrorCode, timestamp: int = NO_TIMESTAMP,
                 offset: int = -1, leader_epoch: int = LEADER_EPOCH) -> Any:
        return ctx.nested("ListOffsetsPartitionResponse", partition_index=index,
                          error_code=code, timestamp=timestamp, offset=offset,
                          leader_epoch=leader_epoch if offset >= 0 else -1)

    def look_up(topic: TopicImage, p: Any) -> Any:
        plog = logs.readable(topic.name, p.partition_index)
        if plog is None:
            return response(p.partition_index, logs.unreadable(topic.name, p.partition_index))
        leader_epoch = LEADER_EPOCH
        if cluster is not None and not topic.is_internal:
            refused = leadership.refusal(ctx, topic.name, p.partition_index,
                                         getattr(p, "current_leader_epoch", -1))
            if refused is not None:
                return response(p.partition_index, refused)
            leader_epoch = cluster.partition(topic.name, p.partition_index).leader_epoch
        if p.timestamp == MAX_TIMESTAMP and ctx.version < 7:
            return response(p.partition_index, ErrorCode.unsupported_version)
        timestamp, offset = _lookup(plog, p.timestamp, committed)
        return response(p.partition_index, ErrorCode.none, timestamp, offset, leader_epoch)

    return ctx.respond(topics=answer_partitions(
        ctx, AclOperation.DESCRIBE, request.topics, lambda t: t.name, lambda t: t.partitions,
        look_up, lambda p, code: response(p.partition_index, code),
        lambda name, partitions: ctx.nested("ListOffsetsTopicResponse", name=name,
                                            partitions=partitions)))
