"""DescribeGroups v0-v6."""

from __future__ import annotations

from typing import Any

from coordinator.groups import admin
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

OMITTED = -(2**31)


async def _describe(ctx: RequestContext, group_id: str) -> admin.DescribedGroup:
    runtime = ctx.broker.runtime
    try:
        return await runtime.read(runtime.partition_for(group_id),
                                  lambda shard, now: admin.describe(shard, group_id),
                                  name="DescribeGroups")
    except CoordinatorError as exc:
        return admin.DescribedGroup(group_id, exc.code, "", "", "")


async def handle(ctx: RequestContext, request: Any) -> Any:
    groups = []
    include_ops = bool(getattr(request, "include_authorized_operations", False))
    for group_id in request.groups:
        if ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            found = await _describe(ctx, group_id)
        else:
            found = admin.DescribedGroup(group_id, ErrorCode.group_authorization_failed, "",
                                         "", "")
        error = found.error
        if error is ErrorCode.group_id_not_found and ctx.version < 6:
            error = ErrorCode.none  # before v6 an unknown group is described as Dead
        groups.append(ctx.nested(
            "DescribedGroup", error_code=error,
            error_message=None, group_id=group_id, group_state=found.state,
            protocol_type=found.protocol_type, protocol_data=found.protocol_data,
            members=tuple(ctx.nested("DescribedGroupMember", member_id=m.member_id,
                                     group_instance_id=m.group_instance_id,
                                     client_id=m.client_id, client_host=m.client_host,
                                     member_metadata=m.metadata, member_assignment=m.assignment)
                          for m in found.members),
            authorized_operations=ctx.authorized_operations(ResourceType.GROUP, group_id)
            if include_ops and error is ErrorCode.none else OMITTED))
    return ctx.respond(groups=tuple(groups))
