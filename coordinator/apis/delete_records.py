"""DeleteRecords (v0-2): each partition's log start offset moves to the offset asked (-1: the
high watermark), as Kafka's ``ReplicaManager.deleteRecords``: durably (the offset is written
beside the partition's segments before the answer, and the segments wholly below it deleted),
so ListOffsets earliest and Fetch start there after a restart too, and a fetch below it gets
OFFSET_OUT_OF_RANGE. An offset past the high watermark is OFFSET_OUT_OF_RANGE; one below the
log start changes nothing; an internal topic, and a topic whose ``cleanup.policy`` lacks
``delete``, are refused, as Kafka refuses them."""

from __future__ import annotations

from typing import Any

from coordinator import topiclog
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

HIGH_WATERMARK = -1
"""The offset standing for the high watermark (``DeleteRecordsRequest.HIGH_WATERMARK``)."""


def handle(ctx: RequestContext, request: Any) -> Any:
    logs = topiclog.of(ctx.broker)
    deletable = ctx.authorized(AclOperation.DELETE, ResourceType.TOPIC,
                               (t.name for t in request.topics))
    topics = []
    for wanted in request.topics:
        topic = ctx.broker.image.topic(wanted.name)
        partitions = []
        for p in wanted.partitions:
            low, code = -1, ErrorCode.none
            plog = logs.get(wanted.name, p.partition_index) if topic is not None else None
            if wanted.name not in deletable:
                code = ErrorCode.topic_authorization_failed
            elif topic is not None and topic.is_internal:
                code = ErrorCode.invalid_topic_exception
            elif plog is None:
                code = ErrorCode.unknown_topic_or_partition
            elif topic is not None and not logs.log_config(topic).delete:
                code = ErrorCode.policy_violation  # "can not be deleted due to the configured
                # policy": a compacted topic's log start moves only by its cleaner
            else:
                target = plog.high_watermark if p.offset == HIGH_WATERMARK else p.offset
                if not 0 <= target <= plog.high_watermark:
                    code = ErrorCode.offset_out_of_range
                else:
                    low = plog.delete_records_before(target)
            partitions.append(ctx.nested("DeleteRecordsPartitionResult",
                                         partition_index=p.partition_index, low_watermark=low,
                                         error_code=code))
        topics.append(ctx.nested("DeleteRecordsTopicResult", name=wanted.name,
                                 partitions=tuple(partitions)))
    return ctx.respond(topics=tuple(topics))
