"""What the transaction APIs share: running a handler on the transactional id's partition,
the error Kafka gives old clients for a fenced producer, and the transaction configs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator import transaction
from coordinator.runtime import CoordinatorError, Result
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext


async def run_on_transaction(ctx: RequestContext, transactional_id: str,
                             handler: Callable[[Any, int], Result], name: str,
                             write: bool = True) -> Any:
    """The handler's response, or a ``CoordinatorError`` turned into its ``ErrorCode``."""
    runtime = ctx.broker.runtime
    index = runtime.partition_for(transactional_id)
    try:
        if write:
            return await runtime.write(index, handler, name=name)
        return await runtime.read(index, handler, name=name)
    except CoordinatorError as exc:
        return exc.code


def fenced_for(version: int, first_version_with_fenced: int, error: ErrorCode) -> ErrorCode:
    """KIP-588: clients older than ``first_version_with_fenced`` get INVALID_PRODUCER_EPOCH
    for PRODUCER_FENCED."""
    if error is ErrorCode.producer_fenced and version < first_version_with_fenced:
        return ErrorCode.invalid_producer_epoch
    return error


def may_write(ctx: RequestContext, transactional_id: str) -> bool:
    return ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)


def config(ctx: RequestContext) -> transaction.TransactionConfig:
    c = ctx.broker.config
    return transaction.TransactionConfig(max_timeout_ms=c["transaction.max.timeout.ms"],
                                         id_expiration_ms=c["transactional.id.expiration.ms"])
