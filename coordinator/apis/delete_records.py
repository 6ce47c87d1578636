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
from coordinator.metadata.image import TopicImage
from coordinator.security.acl import AclOperation
from protocol import ErrorCode

from .context import RequestContext
from .partition_answers import answer_partitions

HIGH_WATERMARK = -1
"""The offset standing for the high watermark (``DeleteRecordsRequest.HIGH_WATERMARK``)."""


def handle(ctx: RequestContext, request: Any) -> Any:
    logs = topiclog.of(ctx.broker)

    def result(index: int, code: ErrorCode, low: int = -1) -> Any:
        return ctx.nested("DeleteRecordsPartitionResult", partition_index=index,
                          low_watermark=low, error_code=code)

    def delete(topic: TopicImage, p: Any) -> Any:
        plog = logs.get(topic.name, p.partition_index)
        if topic.is_internal:
            return result(p.partition_index, ErrorCode.invalid_topic_exception)
        if plog is None:
            return result(p.partition_index, ErrorCode.unknown_topic_or_partition)
        if not logs.log_config(topic).delete:
            # "can not be deleted due to the configured policy": a compacted topic's log start
            # moves only by its cleaner
            return result(p.partition_index, ErrorCode.policy_violation)
        target = plog.high_watermark if p.offset == HIGH_WATERMARK else p.offset
        if not 0 <= target <= plog.high_watermark:
            return result(p.partition_index, ErrorCode.offset_out_of_range)
        return result(p.partition_index, ErrorCode.none, plog.delete_records_before(target))

    return ctx.respond(topics=answer_partitions(
        ctx, AclOperation.DELETE, request.topics, lambda t: t.name, lambda t: t.partitions,
        delete, lambda p, code: result(p.partition_index, code),
        lambda name, partitions: ctx.nested("DeleteRecordsTopicResult", name=name,
                                            partitions=partitions)))
