"""ListTransactions v0-v1: the transactional ids of every coordinator partition, filtered by
state, producer id and (v1) how long they have been running; only those the principal may
DESCRIBE. Unknown state names are echoed in ``unknown_state_filters``, as Kafka."""

from __future__ import annotations

from typing import Any

from coordinator import transaction
from coordinator.runtime import CoordinatorError, PartitionState
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from . import leadership
from .context import RequestContext

_STATES = {state.kafka_name for state in transaction.TransactionState}


async def handle(ctx: RequestContext, request: Any) -> Any:
    wanted = frozenset(request.state_filters)
    unknown = tuple(sorted(wanted - _STATES))
    handler = transaction.list_transactions(
        wanted & _STATES, frozenset(request.producer_id_filters),
        getattr(request, "duration_filter", -1))
    runtime = ctx.broker.runtime
    found: list[transaction.TransactionMetadata] = []
    error = ErrorCode.none
    if not unknown or wanted - set(unknown):
        led, loading = leadership.coordinator_partitions(ctx, runtime.num_partitions)
        if loading:
            error = ErrorCode.coordinator_load_in_progress
        for index in led:
            if runtime.state(index) is PartitionState.LOADING:
                error = ErrorCode.coordinator_load_in_progress
                continue
            try:
                found.extend(await runtime.read(index, handler, name="ListTransactions"))
            except CoordinatorError as exc:
                error = exc.code
    shown = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                           (m.transactional_id for m in found), log_denied=False)
    return ctx.respond(error_code=error, unknown_state_filters=unknown, transaction_states=tuple(
        ctx.nested("TransactionState", transactional_id=m.transactional_id,
                   producer_id=m.producer_id, transaction_state=m.state.kafka_name)
        for m in sorted(found, key=lambda m: m.transactional_id)
        if m.transactional_id in shown))
