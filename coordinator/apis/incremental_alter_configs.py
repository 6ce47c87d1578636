"""IncrementalAlterConfigs v0-v1: GROUP resources (32), per-group configs, here; TOPIC and
BROKER in ``resource_configs``; CLIENT_METRICS (16) in ``client_metrics_configs``.

The new overrides are validated as Kafka's ``GroupConfig.validate`` does (INVALID_CONFIG with
its message) and written as one ``GroupConfig`` record on the group's coordinator partition.
The group does not have to exist. Other resource types are refused with INVALID_REQUEST.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from coordinator.groups.common import group_configs
from coordinator.metadata import topic_configs
from coordinator.runtime import CoordinatorError, Result
from protocol import ErrorCode

from . import client_metrics_configs, resource_configs
from .context import RequestContext

GROUP, CLIENT_METRICS = 32, 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
Op = tuple[str, int, str | None]


def alter(shard: Any, group_id: str, ops: Sequence[Op], broker_config: Any,
          validate_only: bool) -> Result:
    """The write handler: the group's overrides after ``ops``, validated, as one record."""
    old = dict(group_configs.overrides(shard, group_id))
    new = dict(old)
    for name, operation, value in ops:
        if name not in group_configs.GROUP_CONFIG_NAMES:
            raise CoordinatorError(ErrorCode.invalid_config,
                                   f"Unknown group config name: {name}")
        if operation == SET:
            if value is None:
                raise CoordinatorError(ErrorCode.invalid_request,
                                       f"Null value not supported for : {name}")
            new[name] = value
        elif operation == DELETE:
            new.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            verb = "append" if operation == APPEND else "subtract"
            raise CoordinatorError(ErrorCode.invalid_config,
                                   f"Config value {verb} is not allowed for config key: {name}")
        else:
            raise CoordinatorError(ErrorCode.invalid_request,
                                   f"Unknown alter config operation {operation}")
    try:
        group_configs.validate(new, broker_config)
    except group_configs.GroupConfigError as exc:
        raise CoordinatorError(ErrorCode.invalid_config, str(exc)) from None
    if validate_only or new == old:
        return Result()
    return Result([group_configs.record(group_id, new)])


async def _alter_group(ctx: RequestContext, resource: Any, validate_only: bool
                       ) -> tuple[ErrorCode, str | None]:
    group_id = resource.resource_name
    if not group_id:
        return ErrorCode.invalid_request, "Group id must not be empty."
    ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
    config = ctx.broker.config
    runtime = ctx.broker.runtime
    try:
        await runtime.write(
            runtime.partition_for(group_id),
            lambda shard, now: alter(shard, group_id, ops, config, validate_only),
            name="IncrementalAlterConfigs")
    except CoordinatorError as exc:
        return exc.code, exc.message
    return ErrorCode.none, None


async def _alter(ctx: RequestContext, resource: Any, validate_only: bool
                 ) -> resource_configs.Outcome:
    if resource.resource_type == GROUP:
        return await _alter_group(ctx, resource, validate_only)
    if resource.resource_type == resource_configs.TOPIC:
        ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
        return await resource_configs.alter_topic(
            ctx, resource.resource_name, partial(topic_configs.incremental, ops=ops),
            validate_only)
    if resource.resource_type == CLIENT_METRICS:
        return await client_metrics_configs.alter(ctx, resource, validate_only)
    if resource.resource_type == resource_configs.BROKER:
        return resource_configs.alter_broker(ctx, resource.resource_name,
                                             [c.name for c in resource.configs])
    return resource_configs.unsupported(resource)


async def handle(ctx: RequestContext, request: Any) -> Any:
    return await resource_configs.respond(ctx, request, _alter)
