"""DescribeTransactions v0: each transactional id's state, producer, timeout, start time and
partitions (TRANSACTIONAL_ID DESCRIBE, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
TRANSACTIONAL_ID_NOT_FOUND for an id the coordinator does not know)."""

from __future__ import annotations

import datetime
from typing import Any

from coordinator import transaction
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from . import txn_common
from .context import RequestContext

_EPOCH = datetime.datetime.fromtimestamp(0, datetime.UTC)


def _time(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000.0, datetime.UTC) if ms >= 0 else \
        _EPOCH - datetime.timedelta(milliseconds=1)


def _state(ctx: RequestContext, transactional_id: str, error: ErrorCode,
           meta: transaction.TransactionMetadata | None = None) -> Any:
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions if meta else ()):
        topics.setdefault(topic, []).append(partition)
    return ctx.nested(
        "TransactionState", error_code=error, transactional_id=transactional_id,
        transaction_state=meta.state.kafka_name if meta else "",
        transaction_timeout=datetime.timedelta(milliseconds=meta.timeout_ms if meta else 0),
        transaction_start_time=_time(meta.start_ms if meta else -1),
        producer_id=meta.producer_id if meta else -1,
        producer_epoch=meta.producer_epoch if meta else -1,
        topics=tuple(ctx.nested("TopicData", topic=t, partitions=tuple(ps))
                     for t, ps in topics.items()))


async def handle(ctx: RequestContext, request: Any) -> Any:
    states = []
    for transactional_id in request.transactional_ids:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                             transactional_id):
            states.append(_state(ctx, transactional_id,
                                 ErrorCode.transactional_id_authorization_failed))
            continue
        meta = await txn_common.run_on_transaction(
            ctx, transactional_id, transaction.describe(transactional_id),
            "DescribeTransactions", write=False)
        if isinstance(meta, ErrorCode):
            states.append(_state(ctx, transactional_id, meta))
        elif meta is None:
            states.append(_state(ctx, transactional_id, ErrorCode.transactional_id_not_found))
        else:
            states.append(_state(ctx, transactional_id, ErrorCode.none, meta))
    return ctx.respond(transaction_states=tuple(states))
