"""AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins the transaction, so
its marker reaches the group's pending offsets. As Kafka: TRANSACTIONAL_ID WRITE, then GROUP
READ."""

from __future__ import annotations

from typing import Any

from coordinator import transaction
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from . import txn_common
from .context import RequestContext


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not txn_common.may_write(ctx, request.transactional_id):
        return ctx.respond(error_code=ErrorCode.transactional_id_authorization_failed)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ctx.respond(error_code=ErrorCode.group_authorization_failed)
    outcome = await txn_common.run_on_transaction(
        ctx, request.transactional_id,
        transaction.add_offsets(request.transactional_id, request.producer_id,
                                request.producer_epoch, request.group_id,
                                ctx.broker.runtime.num_partitions), "AddOffsetsToTxn")
    error = outcome if isinstance(outcome, ErrorCode) else outcome.error
    return ctx.respond(error_code=txn_common.fenced_for(ctx.version, 2, error))
