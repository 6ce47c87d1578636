"""ListOffsets (v1+): earliest (-2), latest (-1), max timestamp (-3, v7+), or the first offset
whose timestamp is at or after a given one."""

from __future__ import annotations

from typing import Any

from coordinator import topiclog
from coordinator.security.acl import AclOperation, ResourceType
from coordinator.topiclog import PartitionLog
from coordinator.topiclog.internal import InternalPartitionLog
from coordinator.topiclog.partition import LEADER_EPOCH
from protocol import ErrorCode

from . import leadership
from .context import RequestContext

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
    cluster = ctx.broker.cluster
    topics = []
    describable = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                 (t.name for t in request.topics))
    for wanted in request.topics:
        topic = ctx.broker.image.topic(wanted.name)
        partitions = []
        for p in wanted.partitions:
            if wanted.name not in describable:
                partitions.append(ctx.nested(
                    "ListOffsetsPartitionResponse", partition_index=p.partition_index,
                    error_code=ErrorCode.topic_authorization_failed, timestamp=NO_TIMESTAMP,
                    offset=-1, leader_epoch=-1))
                continue
            plog = logs.readable(wanted.name, p.partition_index) if topic is not None else None
            if plog is None:
                partitions.append(ctx.nested(
                    "ListOffsetsPartitionResponse", partition_index=p.partition_index,
                    error_code=ErrorCode.unknown_topic_or_partition, timestamp=NO_TIMESTAMP,
                    offset=-1, leader_epoch=-1))
                continue
            refused = leadership.refusal(ctx, wanted.name, p.partition_index,
                                         getattr(p, "current_leader_epoch", -1)) \
                if cluster is not None and topic is not None and not topic.is_internal else None
            if refused is not None:
                partitions.append(ctx.nested(
                    "ListOffsetsPartitionResponse", partition_index=p.partition_index,
                    error_code=refused, timestamp=NO_TIMESTAMP, offset=-1, leader_epoch=-1))
                continue
            if p.timestamp == MAX_TIMESTAMP and ctx.version < 7:
                timestamp, offset = NO_TIMESTAMP, -1
                code = ErrorCode.unsupported_version
            else:
                timestamp, offset = _lookup(plog, p.timestamp,
                                            getattr(request, "isolation_level", 0) == 1)
                code = ErrorCode.none
            partitions.append(ctx.nested(
                "ListOffsetsPartitionResponse", partition_index=p.partition_index,
                error_code=code, timestamp=timestamp, offset=offset,
                leader_epoch=(LEADER_EPOCH if cluster is None else
                              cluster.partition(wanted.name, p.partition_index).leader_epoch)
                if offset >= 0 else -1))
        topics.append(ctx.nested("ListOffsetsTopicResponse", name=wanted.name,
                                 partitions=tuple(partitions)))
    return ctx.respond(topics=tuple(topics))
