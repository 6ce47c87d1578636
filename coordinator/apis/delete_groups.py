"""DeleteGroups v0-v2: tombstones for the group and all its offsets."""

from __future__ import annotations

from typing import Any

from coordinator.groups import admin
from coordinator.runtime import Result
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext
from .group_common import run_on_group


async def handle(ctx: RequestContext, request: Any) -> Any:
    results = []
    deletable = ctx.authorized(AclOperation.DELETE, ResourceType.GROUP, request.groups_names)
    for group_id in request.groups_names:
        if group_id not in deletable:
            results.append(ctx.nested("DeletableGroupResult", group_id=group_id,
                                      error_code=ErrorCode.group_authorization_failed))
            continue

        # a def, not a lambda: mypy cannot infer a lambda with a default argument
        def delete(shard: Any, now: int, g: str = group_id) -> Result:
            return admin.delete_group(shard, g)

        error = await run_on_group(ctx, group_id, delete, "DeleteGroups")
        results.append(ctx.nested("DeletableGroupResult", group_id=group_id, error_code=error))
    return ctx.respond(results=tuple(results))
