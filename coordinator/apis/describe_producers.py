"""DescribeProducers (v0): the idempotent and transactional producers with batches in each
partition (what ``kafka-transactions.sh describe-producers`` and ``find-hanging`` read): id,
epoch, last sequence and timestamp, and the first offset of a transaction still open. TOPIC
READ is needed, as Kafka; an internal topic's partitions have no producers."""

from __future__ import annotations

from typing import Any

from coordinator import topiclog
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

NO_COORDINATOR_EPOCH = -1
NO_TRANSACTION = -1


def handle(ctx: RequestContext, request: Any) -> Any:
    logs = topiclog.of(ctx.broker)
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC,
                              (t.name for t in request.topics))
    topics = []
    for wanted in request.topics:
        topic = ctx.broker.image.topic(wanted.name)
        partitions = []
        for index in wanted.partition_indexes:
            producers: tuple[Any, ...] = ()
            code = ErrorCode.none
            plog = logs.get(wanted.name, index) if topic is not None else None
            if wanted.name not in readable:
                code = ErrorCode.topic_authorization_failed
            elif topic is None or not 0 <= index < topic.partitions:
                code = ErrorCode.unknown_topic_or_partition
            elif plog is not None:
                ongoing = plog.transactions.ongoing
                producers = tuple(
                    ctx.nested("ProducerState", producer_id=pid, producer_epoch=epoch,
                               last_sequence=last_seq, last_timestamp=timestamp,
                               coordinator_epoch=NO_COORDINATOR_EPOCH,
                               current_txn_start_offset=ongoing.get(pid, NO_TRANSACTION))
                    for pid, epoch, last_seq, timestamp in plog.producers.active())
            partitions.append(ctx.nested("PartitionResponse", partition_index=index,
                                         error_code=code, error_message=None,
                                         active_producers=producers))
        topics.append(ctx.nested("TopicResponse", name=wanted.name,
                                 partitions=tuple(partitions)))
    return ctx.respond(topics=tuple(topics))
