"""AddPartitionsToTxn v0-v3 (the client's form): the partitions a transactional producer is
about to write join its transaction. As Kafka: TRANSACTIONAL_ID WRITE, then TOPIC WRITE per
topic; an unknown partition fails the request (UNKNOWN_TOPIC_OR_PARTITION for it,
OPERATION_NOT_ATTEMPTED for the others)."""

from __future__ import annotations

from typing import Any

from coordinator import transaction
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from . import txn_common
from .context import RequestContext


async def handle(ctx: RequestContext, request: Any) -> Any:
    wanted = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
    if not txn_common.may_write(ctx, request.v3_and_below_transactional_id):
        return _respond(ctx, request, {tp: ErrorCode.transactional_id_authorization_failed
                                       for tp in wanted})
    writable = ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC,
                              (t.name for t in request.v3_and_below_topics))
    errors: dict[tuple[str, int], ErrorCode] = {}
    for topic, partition in wanted:
        image = ctx.broker.image.topic(topic)
        if topic not in writable:
            errors[(topic, partition)] = ErrorCode.topic_authorization_failed
        elif image is None or image.is_internal or not 0 <= partition < image.partitions:
            errors[(topic, partition)] = ErrorCode.unknown_topic_or_partition
    if errors:
        return _respond(ctx, request, {tp: errors.get(tp, ErrorCode.operation_not_attempted)
                                       for tp in wanted})
    transactional_id = request.v3_and_below_transactional_id
    outcome = await txn_common.run_on_transaction(
        ctx, transactional_id,
        transaction.add_partitions(transactional_id, request.v3_and_below_producer_id,
                                   request.v3_and_below_producer_epoch, wanted),
        "AddPartitionsToTxn")
    error = outcome if isinstance(outcome, ErrorCode) else outcome.error
    error = txn_common.fenced_for(ctx.version, 2, error)
    return _respond(ctx, request, {tp: error for tp in wanted})


def _respond(ctx: RequestContext, request: Any, errors: dict[tuple[str, int], ErrorCode]
             ) -> Any:
    return ctx.respond(results_by_topic_v3_and_below=tuple(
        ctx.nested("AddPartitionsToTxnTopicResult", name=t.name, results_by_partition=tuple(
            ctx.nested("AddPartitionsToTxnPartitionResult", partition_index=p,
                       partition_error_code=errors[(t.name, p)])
            for p in t.partitions))
        for t in request.v3_and_below_topics))
