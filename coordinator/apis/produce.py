"""Produce: append each partition's batch to its log; acks=-1 answers once it is durable.

acks=0 gets no response at all (the handler returns None, which the dispatcher turns into
nothing on the wire), as Kafka does.
"""

from __future__ import annotations

import datetime
from typing import Any

from coordinator import topiclog, transaction
from coordinator.observability.logs import get_logger
from coordinator.security.acl import AclOperation, ResourceType
from coordinator.topiclog import AppendResult, BatchError
from coordinator.topiclog.batch import HEADER_SIZE, read_header
from coordinator.transaction import TransactionMetadata, TransactionState
from protocol import ErrorCode

from . import leadership, txn_common
from .context import RequestContext

IN_SYNC_REPLICAS = 1  # this node is every partition's only replica
log = get_logger("coordinator.apis.produce")

_UTC = datetime.UTC


def _append_time(ms: int) -> datetime.datetime | None:
    return None if ms < 0 else datetime.datetime.fromtimestamp(ms / 1000.0, _UTC)


def _partition(ctx: RequestContext, index: int, code: ErrorCode,
               result: AppendResult | None = None, message: str | None = None,
               current_leader: Any = None) -> Any:
    fields = {} if current_leader is None else {"current_leader": current_leader}
    return ctx.nested(
        "PartitionProduceResponse", index=index, error_code=code,
        base_offset=result.base_offset if result else -1,
        log_append_time=_append_time(result.log_append_time_ms if result else -1),
        log_start_offset=result.log_start_offset if result else -1,
        record_errors=(), error_message=message, **fields)


def _transactional_error(txn: TransactionMetadata | ErrorCode | None, topic: str,
                         partition: int, records: bytes) -> ErrorCode | None:
    """Whether a transactional producer may write this batch now (Kafka's checks of the
    producer against its transaction): its producer id and current epoch (an older epoch is a
    fenced zombie), and the partition added to its ongoing transaction."""
    if isinstance(txn, ErrorCode):
        return txn
    if len(records) < HEADER_SIZE:
        return None  # the log refuses it with Kafka's error
    header = read_header(records)
    if txn is None or header.producer_id != txn.producer_id:
        return ErrorCode.invalid_producer_id_mapping
    if header.producer_epoch < txn.producer_epoch:
        return ErrorCode.invalid_producer_epoch
    if header.producer_epoch > txn.producer_epoch or txn.state is not TransactionState.ONGOING \
            or (topic, partition) not in txn.partitions:
        return ErrorCode.invalid_txn_state
    return None


async def handle(ctx: RequestContext, request: Any) -> Any:
    logs = topiclog.of(ctx.broker)
    acks = request.acks
    txn_id = request.transactional_id
    txn: TransactionMetadata | ErrorCode | None = None
    if txn_id is not None:
        if not txn_common.may_write(ctx, txn_id):
            txn = ErrorCode.transactional_id_authorization_failed
        else:
            txn = await txn_common.run_on_transaction(ctx, txn_id, transaction.describe(txn_id),
                                                      "Produce", write=False)
    answers: list[tuple[str, list[Any]]] = []
    durable: list[tuple[Any, int, list[Any], int]] = []
    appended = False
    writable = ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC,
                              (t.name for t in request.topic_data))
    cluster = ctx.broker.cluster
    leaders: list[int] = []  # of the partitions answered NOT_LEADER_OR_FOLLOWER (KIP-951)
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
            in_sync = IN_SYNC_REPLICAS
            if cluster is not None:
                refused = leadership.refusal(ctx, name, index)
                state = cluster.partition(name, index)
                if refused is not None:
                    leaders.append(state.leader)
                    partitions.append(_partition(
                        ctx, index, refused, current_leader=leadership.current_leader(
                            ctx, name, index)))
                    continue
                plog.leader_epoch = state.leader_epoch
                in_sync = len(state.isr(cluster.running))
            records = bytes(data.records or b"")
            if txn_id is None and len(records) >= HEADER_SIZE \
                    and read_header(records).is_transactional:
                # as Kafka: transactional records need the request's transactional id
                partitions.append(_partition(ctx, index,
                                             ErrorCode.transactional_id_authorization_failed))
                continue
            if txn_id is not None and (
                    error := _transactional_error(txn, name, index, records)) is not None:
                log.info("transactional produce refused", topic=name, partition=index,
                         transactional_id=txn_id, error=error.name)
                partitions.append(_partition(ctx, index, error))
                continue
            config = logs.log_config(topic)
            if acks == -1 and config.min_insync_replicas > in_sync:
                partitions.append(_partition(
                    ctx, index, ErrorCode.not_enough_replicas,
                    message=f"The size of the current ISR : {in_sync} is insufficient "
                    f"to satisfy the min.isr requirement of {config.min_insync_replicas} for "
                    f"partition {name}-{index}, live replica(s) broker.id are : "
                    f"Set({ctx.node})"))
                continue
            try:
                result = plog.append(records, config, logs.now_ms(),
                                     allow_zstd=ctx.version >= 7)
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
    if leaders:
        return ctx.respond(responses=topics,
                           node_endpoints=leadership.node_endpoints(ctx, leaders))
    return ctx.respond(responses=topics)
