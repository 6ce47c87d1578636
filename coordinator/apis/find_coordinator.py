"""FindCoordinator v0-v6: this node coordinates every group (and batched keys from v4)."""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from .context import RequestContext

GROUP, TRANSACTION, SHARE = 0, 1, 2


def _locate(ctx: RequestContext, key: str, key_type: int) -> tuple[ErrorCode, str | None]:
    if key_type == GROUP:
        return ErrorCode.none, None
    if key_type == SHARE and ctx.version >= 6:
        # Share-partition keys are "groupId:topicId:partition".
        parts = key.rsplit(":", 2)
        if len(parts) == 3 and parts[0] and parts[2].lstrip("-").isdigit():
            return ErrorCode.none, None
        return ErrorCode.invalid_request, f"Invalid share coordinator key: {key}"
    if key_type == TRANSACTION:
        return (ErrorCode.coordinator_not_available,
                "This node runs no transaction coordinator.")
    return ErrorCode.invalid_request, f"Unknown coordinator key type {key_type}"


def handle(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    node, host, port = broker.node_id, broker.endpoint.host, broker.endpoint.port
    key_type = getattr(request, "key_type", GROUP)
    if ctx.version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            error, message = _locate(ctx, key, key_type)
            found = error is ErrorCode.none
            coordinators.append(ctx.nested(
                "Coordinator", key=key, node_id=node if found else -1, host=host if found else "",
                port=port if found else -1, error_code=error, error_message=message))
        return ctx.respond(coordinators=tuple(coordinators))
    error, message = _locate(ctx, request.key, key_type)
    if error is not ErrorCode.none:
        return ctx.respond(error_code=error, error_message=message, node_id=-1, host="", port=-1)
    return ctx.respond(error_code=ErrorCode.none, error_message=None, node_id=node, host=host,
                       port=port)
