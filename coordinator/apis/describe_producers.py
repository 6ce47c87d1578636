"""DescribeProducers (v0): the idempotent and transactional producers with batches in each
partition (what ``kafka-transactions.sh describe-producers`` and ``find-hanging`` read): id,
epoch, last sequence and timestamp, and the first offset of a transaction still open. TOPIC
READ is needed, as Kafka; an internal topic's partitions have no producers."""

from __future__ import annotations

from typing import Any

from coordinator import topiclog
from coordinator.metadata.image import TopicImage
from coordinator.security.acl import AclOperation
from protocol import ErrorCode

from .context import RequestContext
from .partition_answers import answer_partitions

NO_COORDINATOR_EPOCH = -1
NO_TRANSACTION = -1


def handle(ctx: RequestContext, request: Any) -> Any:
    logs = topiclog.of(ctx.broker)

    def response(index: int, code: ErrorCode, producers: tuple[Any, ...] = ()) -> Any:
        return ctx.nested("PartitionResponse", partition_index=index, error_code=code,
                          error_message=None, active_producers=producers)

    def describe(topic: TopicImage, index: int) -> Any:
        if not 0 <= index < topic.partitions:
            return response(index, ErrorCode.unknown_topic_or_partition)
        plog = logs.get(topic.name, index)
        if plog is None:  # an internal topic's partition
            return response(index, ErrorCode.none)
        ongoing = plog.transactions.ongoing
        return response(index, ErrorCode.none, tuple(
            ctx.nested("ProducerState", producer_id=pid, producer_epoch=epoch,
                       last_sequence=last_seq, last_timestamp=timestamp,
                       coordinator_epoch=NO_COORDINATOR_EPOCH,
                       current_txn_start_offset=ongoing.get(pid, NO_TRANSACTION))
            for pid, epoch, last_seq, timestamp in plog.producers.active()))

    return ctx.respond(topics=answer_partitions(
        ctx, AclOperation.READ, request.topics, lambda t: t.name,
        lambda t: t.partition_indexes, describe, response,
        lambda name, partitions: ctx.nested("TopicResponse", name=name,
                                            partitions=partitions)))
