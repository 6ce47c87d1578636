"""InitProducerId: an idempotent producer gets a new producer id at epoch 0 each time (no
transactional id); a transactional producer gets its transactional id's producer id with the
epoch bumped, which fences any older producer of that id: its open transaction is aborted
first (the request waits for the markers), as Kafka's TransactionCoordinator does.
With an authorizer, an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on
some topic (CLUSTER_AUTHORIZATION_FAILED otherwise), a transactional one WRITE on its
transactional id, as Kafka."""

from __future__ import annotations

import datetime
from typing import Any

from coordinator import topiclog, transaction
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from . import txn_common, write_txn_markers
from .context import RequestContext

ATTEMPTS = 5  # fencing an open transaction takes one round of markers, then the bump


def _ms(value: Any) -> int:
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


async def handle(ctx: RequestContext, request: Any) -> Any:
    transactional_id = request.transactional_id
    if transactional_id is not None:
        return await _transactional(ctx, request, transactional_id)
    if not (ctx.authorize(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, log_denied=False)
            or ctx.authorize_any(AclOperation.WRITE, ResourceType.TOPIC)):
        return ctx.respond(error_code=ErrorCode.cluster_authorization_failed,
                           producer_id=-1, producer_epoch=-1)
    producer_id = topiclog.of(ctx.broker).producer_ids.next_id()
    return ctx.respond(error_code=ErrorCode.none, producer_id=producer_id, producer_epoch=0)


async def _transactional(ctx: RequestContext, request: Any, transactional_id: str) -> Any:
    if not transactional_id:
        return ctx.respond(error_code=ErrorCode.invalid_request, producer_id=-1,
                           producer_epoch=-1)
    if not txn_common.may_write(ctx, transactional_id):
        return ctx.respond(error_code=ErrorCode.transactional_id_authorization_failed,
                           producer_id=-1, producer_epoch=-1)
    markers = write_txn_markers.of(ctx.broker)
    outcome: Any = None
    # KIP-360: a producer recovering names its id and epoch; once this request has fenced
    # them (aborting the open transaction with the next epoch) it names that one
    expected = (getattr(request, "producer_id", -1), getattr(request, "producer_epoch", -1))
    for _ in range(ATTEMPTS):
        handler = transaction.init_producer_id(
            transactional_id, _ms(request.transaction_timeout), *expected,
            topiclog.of(ctx.broker).producer_ids.next_id(), txn_common.config(ctx))
        outcome = await txn_common.run_on_transaction(ctx, transactional_id, handler,
                                                      "InitProducerId")
        if isinstance(outcome, ErrorCode):
            return ctx.respond(error_code=outcome, producer_id=-1, producer_epoch=-1)
        finishing = outcome.to_complete
        if finishing is None:
            break
        if not await markers.complete(finishing):
            break  # answered CONCURRENT_TRANSACTIONS: the client retries
        if expected[0] != -1:
            expected = (finishing.producer_id, finishing.producer_epoch)
    error = txn_common.fenced_for(ctx.version, 4, outcome.error)
    return ctx.respond(error_code=error, producer_id=outcome.producer_id,
                       producer_epoch=outcome.producer_epoch)
