"""LeaveGroup v0-v5 (batched members from v3)."""

from __future__ import annotations

from typing import Any

from coordinator.groups import classic_protocol
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext
from .group_common import run_on_group


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ctx.respond(error_code=ErrorCode.group_authorization_failed, members=())
    if ctx.version >= 3:
        members = [(m.member_id, m.group_instance_id, getattr(m, "reason", None))
                   for m in request.members]
    else:
        members = [(request.member_id, None, None)]
    outcome = await run_on_group(
        ctx, request.group_id,
        lambda shard, now: classic_protocol.leave(shard, request.group_id, members, now),
        "LeaveGroup")
    if isinstance(outcome, ErrorCode):
        return ctx.respond(error_code=outcome, members=())
    if ctx.version < 3:
        return ctx.respond(error_code=outcome[0])
    return ctx.respond(error_code=ErrorCode.none, members=tuple(
        ctx.nested("MemberResponse", member_id=member_id, group_instance_id=instance_id,
                   error_code=error)
        for (member_id, instance_id, _), error in zip(members, outcome, strict=True)))
