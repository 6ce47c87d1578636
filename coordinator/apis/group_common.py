"""What the group APIs share: running a handler on the group's partition, errors as codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator.runtime import CoordinatorError, Result
from protocol import ErrorCode

from .context import RequestContext


async def run_on_group(ctx: RequestContext, group_id: str, handler: Callable[[Any, int], Result],
                       name: str) -> Any:
    """The handler's response, or a ``CoordinatorError`` turned into its ``ErrorCode``."""
    runtime = ctx.broker.runtime
    try:
        return await runtime.write(runtime.partition_for(group_id), handler, name=name,
                                   group_id=group_id)
    except CoordinatorError as exc:
        return exc.code


async def run_on_group_or_error(ctx: RequestContext, group_id: str,
                                handler: Callable[[Any, int], Result], name: str) -> Any:
    """``run_on_group``, with the ``CoordinatorError`` itself (its message too) on failure."""
    runtime = ctx.broker.runtime
    try:
        return await runtime.write(runtime.partition_for(group_id), handler, name=name,
                                   group_id=group_id)
    except CoordinatorError as exc:
        return exc


def client_host(ctx: RequestContext) -> str:
    return "/" + ctx.connection_id.rsplit("-", 1)[0].rsplit(":", 1)[0]


def is_error(outcome: Any) -> bool:
    return isinstance(outcome, ErrorCode)
