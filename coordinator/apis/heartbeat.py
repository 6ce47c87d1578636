"""Heartbeat v0-v4."""

from __future__ import annotations

from typing import Any

from coordinator.cluster import routing
from coordinator.groups import classic_protocol
from coordinator.groups.classic import session as classic_session
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext
from .group_common import run_on_group


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ctx.respond(error_code=ErrorCode.group_authorization_failed)
    beat = classic_session.HeartbeatRequest(
        request.group_id, request.generation_id, request.member_id,
        getattr(request, "group_instance_id", None))
    error = await run_on_group(ctx, request.group_id,
                               lambda shard, now: classic_protocol.heartbeat(shard, beat, now),
                               "Heartbeat")
    if error == ErrorCode.coordinator_load_in_progress:  # the group's partition is loading
        error = routing.loading_answer(routing.HEARTBEAT)
    return ctx.respond(error_code=error)
