"""IncrementalAlterConfigs v0-v1: GROUP resources (32), per-group configs, here; TOPIC and
BROKER in ``resource_configs``; CLIENT_METRICS (16) in ``client_metrics_configs``.

The new overrides are validated as Kafka's ``GroupConfig.validate`` does (INVALID_CONFIG with
its message) and written as ``ConfigRecord``s of the GROUP resource to the metadata log, as
Kafka's controller keeps them: the group does not have to exist, and its coordinator
partition's state (loading, say) does not matter. Other resource types are refused with
INVALID_REQUEST.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from coordinator.groups.common import group_configs
from coordinator.metadata import topic_configs
from coordinator.metadata.config_resources import GROUP
from coordinator.metadata.topic_configs import AlterError
from protocol import ErrorCode

from . import client_metrics_configs, resource_configs
from .context import RequestContext

CLIENT_METRICS = 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
Op = tuple[str, int, str | None]


def altered(old: Mapping[str, str], ops: Sequence[Op], broker_config: Any) -> dict[str, str]:
    """The group's overrides after ``ops``, validated (AlterError says why not)."""
    new = dict(old)
    for name, operation, value in ops:
        if name not in group_configs.GROUP_CONFIG_NAMES:
            raise AlterError(ErrorCode.invalid_config, f"Unknown group config name: {name}")
        if operation == SET:
            if value is None:
                raise AlterError(ErrorCode.invalid_request,
                                 f"Null value not supported for : {name}")
            new[name] = value
        elif operation == DELETE:
            new.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            verb = "append" if operation == APPEND else "subtract"
            raise AlterError(ErrorCode.invalid_config,
                             f"Config value {verb} is not allowed for config key: {name}")
        else:
            raise AlterError(ErrorCode.invalid_request,
                             f"Unknown alter config operation {operation}")
    try:
        group_configs.validate(new, broker_config)
    except group_configs.GroupConfigError as exc:
        raise AlterError(ErrorCode.invalid_config, str(exc)) from None
    return new


async def _alter_group(ctx: RequestContext, resource: Any, validate_only: bool
                       ) -> tuple[ErrorCode, str | None]:
    group_id = resource.resource_name
    if not group_id:
        return ErrorCode.invalid_request, "Group id must not be empty."
    ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
    broker = ctx.broker
    try:
        await broker.image.configs.alter(
            broker.metadata_log, GROUP, group_id,
            lambda old: altered(old, ops, broker.config), validate_only)
    except AlterError as exc:
        return exc.code, exc.message
    except OSError as exc:
        return ErrorCode.unknown_server_error, f"Could not write the configs: {exc}"
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
