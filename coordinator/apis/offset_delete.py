"""OffsetDelete v0: tombstones for a group's offsets of topics it no longer subscribes to."""

from __future__ import annotations

from typing import Any

from coordinator.groups import admin
from coordinator.observability import sensors
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext
from .group_common import run_on_group


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return ctx.respond(error_code=ErrorCode.group_authorization_failed, topics=())
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC,
                              (t.name for t in request.topics))
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions
              if t.name in readable]
    outcome = await run_on_group(
        ctx, request.group_id,
        lambda shard, now: admin.delete_offsets(shard, request.group_id, wanted),
        "OffsetDelete")
    if isinstance(outcome, ErrorCode):
        return ctx.respond(error_code=outcome, topics=())
    error, errors = outcome
    if error is not ErrorCode.none:
        return ctx.respond(error_code=error, topics=())
    sensors.record_offsets_deleted(sum(e is ErrorCode.none for e in errors.values()))
    denied = ErrorCode.topic_authorization_failed
    return ctx.respond(error_code=ErrorCode.none, topics=tuple(
        ctx.nested("OffsetDeleteResponseTopic", name=t.name, partitions=tuple(
            ctx.nested("OffsetDeleteResponsePartition", partition_index=p.partition_index,
                       error_code=errors[(t.name, p.partition_index)]
                       if t.name in readable else denied)
            for p in t.partitions))
        for t in request.topics))
