"""ListGroups v0-v5 (state filter from v4, type filter from v5)."""

from __future__ import annotations

from typing import Any

from coordinator.groups import admin
from coordinator.runtime import CoordinatorError, PartitionState
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from . import leadership
from .context import RequestContext


async def handle(ctx: RequestContext, request: Any) -> Any:
    runtime = ctx.broker.runtime
    states = {s.lower() for s in getattr(request, "states_filter", ()) or ()}
    types = {t.lower() for t in getattr(request, "types_filter", ()) or ()}
    listed: list[admin.ListedGroup] = []
    error = ErrorCode.none
    led, loading = leadership.coordinator_partitions(ctx, runtime.num_partitions)
    if loading:
        error = ErrorCode.coordinator_load_in_progress
    for index in led:
        if runtime.state(index) is not PartitionState.ACTIVE:
            if runtime.state(index) is PartitionState.LOADING:
                error = ErrorCode.coordinator_load_in_progress
            continue
        try:
            listed.extend(await runtime.read(index, lambda shard, now: admin.list_groups(shard),
                                             name="ListGroups"))
        except CoordinatorError as exc:
            error = exc.code
    chosen = [g for g in listed
              if (not states or g.state.lower() in states)
              and (not types or g.group_type.lower() in types)]
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER, log_denied=False):
        # without DESCRIBE on the cluster, the groups the principal may DESCRIBE (as Kafka)
        visible = ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP,
                                 (g.group_id for g in chosen), log_denied=False)
        chosen = [g for g in chosen if g.group_id in visible]
    return ctx.respond(error_code=error, groups=tuple(
        ctx.nested("ListedGroup", group_id=g.group_id, protocol_type=g.protocol_type,
                   group_state=g.state, group_type=g.group_type)
        for g in sorted(chosen, key=lambda g: g.group_id)))
