"""Produce: append each partition's batch to its log; acks=-1 answers once it is durable.

acks=0 gets no response at all (the handler returns None, which the dispatcher turns into
nothing on the wire), as Kafka does.
"""

from __future__ import annotations

import datetime
from typing import Any

from coordinator import topiclog
from coordinator.observability.logs import get_logger
from coordinator.security.acl import AclOperation, ResourceType
from coordinator.topiclog import AppendResult, BatchError
from protocol import ErrorCode

from .context import RequestContext

log = get_logger("coordinator.apis.produce")

_UTC = datetime.UTC


def _append_time(ms: int) -> datetime.datetime | None:
    return None if ms < 0 else datetime.datetime.fromtimestamp(ms / 1000.0, _UTC)


def _partition(ctx: RequestContext, index: int, code: ErrorCode,
               result: AppendResult | None = None, message: str | None = None) -> Any:
    return ctx.nested(
        "PartitionProduceResponse", index=index, error_code=code,
        base_offset=result.base_offset if result else -1,
        log_append_time=_append_time(result.log_append_time_ms if result else -1),
        log_start_offset=result.log_start_offset if result else -1,
        record_errors=(), error_message=message)


async def handle(ctx: RequestContext, request: Any) -> Any:
    logs = topiclog.of(ctx.broker)
    acks = request.acks
    answers: list[tuple[str, list[Any]]] = []
    durable: list[tuple[Any, int, list[Any], int]] = []
    appended = False
    writable = ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC,
                              (t.name for t in request.topic_data))
    for topic_data in request.topic_data:
        name = topic_data.name
        topic = ctx.broker.image.topic(name)
        partitions: list[Any] = []
        answers.append((name, partitions))
        for data in topic_data.partition_data:
            index = data.index
            if acks not in (0, 1, -1):
                partitions.append(_partition(ctx, index, ErrorCode.invalid_required_acks))
                continue
            if request.transactional_id is not None:
                partitions.append(_partition(ctx, index,
                                             ErrorCode.transactional_id_authorization_failed,
                                             message="Transactions are not supported"))
                continue
            if name not in writable:
                partitions.append(_partition(ctx, index, ErrorCode.topic_authorization_failed))
                continue
            if topic is not None and topic.is_internal:
                partitions.append(_partition(ctx, index, ErrorCode.invalid_topic_exception,
                                             message=f"Cannot append to internal topic {name}"))
                continue
            plog = logs.get(name, index) if topic is not None else None
            if topic is None or plog is None:
                partitions.append(_partition(ctx, index, ErrorCode.unknown_topic_or_partition))
                continue
            try:
                result = plog.append(bytes(data.records or b""), logs.log_config(topic),
                                     logs.now_ms(), allow_zstd=ctx.version >= 7)
            except BatchError as exc:
                log.info("produce refused", topic=name, partition=index,
                         error=exc.code.name, reason=exc.message, client_id=ctx.header.client_id)
                partitions.append(_partition(ctx, index, exc.code, message=exc.message))
                continue
            except OSError as exc:
                log.error("topic log append failed", topic=name, partition=index,
                          error=str(exc))
                partitions.append(_partition(ctx, index, ErrorCode.kafka_storage_error,
                                             message=str(exc)))
                continue
            appended = appended or not result.duplicate
            partitions.append(_partition(ctx, index, ErrorCode.none, result))
            if acks == -1:
                durable.append((plog, result.last_offset + 1, partitions, len(partitions) - 1))
    if appended:
        logs.notify_appended()
    for plog, upto, partitions, position in durable:
        try:
            await logs.make_durable(plog, upto)
        except OSError as exc:
            log.error("topic log fsync failed", topic=plog.topic, partition=plog.partition,
                      error=str(exc))
            partitions[position] = _partition(ctx, partitions[position].index,
                                              ErrorCode.kafka_storage_error, message=str(exc))
    if acks == 0:
        return None
    topics = tuple(ctx.nested("TopicProduceResponse", name=name, partition_responses=tuple(p))
                   for name, p in answers)
    return ctx.respond(responses=topics)
