"""IncrementalAlterConfigs v0-v1: GROUP resources (32) in ``group_resource_configs``; TOPIC and
BROKER in ``resource_configs``; CLIENT_METRICS (16) in ``client_metrics_configs``. Other
resource types are refused with INVALID_REQUEST.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from coordinator.metadata import topic_configs
from coordinator.metadata.config_resources import CLIENT_METRICS, GROUP

from . import client_metrics_configs, group_resource_configs, resource_configs
from .context import RequestContext


async def _alter(ctx: RequestContext, resource: Any, validate_only: bool
                 ) -> resource_configs.Outcome:
    ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
    if resource.resource_type == GROUP:
        return await group_resource_configs.alter(
            ctx, resource.resource_name,
            lambda old, config: group_resource_configs.altered(old, ops, config), validate_only)
    if resource.resource_type == resource_configs.TOPIC:
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
