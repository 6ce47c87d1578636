"""SyncGroup v0-v5."""

from __future__ import annotations

from typing import Any

from coordinator.groups import classic_protocol
from coordinator.groups.classic import join as classic
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext
from .group_common import run_on_group


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ctx.respond(error_code=ErrorCode.group_authorization_failed, assignment=b"",
                           protocol_type=None, protocol_name=None)
    sync = classic.SyncRequest(
        group_id=request.group_id, generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
        assignments=tuple((a.member_id, bytes(a.assignment)) for a in request.assignments))
    outcome = await run_on_group(ctx, request.group_id,
                                 lambda shard, now: classic_protocol.sync(shard, sync, now),
                                 "SyncGroup")
    if isinstance(outcome, ErrorCode):
        outcome = classic.SyncOutcome(outcome)
    return ctx.respond(error_code=outcome.error, assignment=outcome.assignment,
                       protocol_type=outcome.protocol_type, protocol_name=outcome.protocol_name)
