"""AlterConfigs v0-v2 (the legacy API: each resource's configs replaced as a whole) for TOPIC,
BROKER and GROUP resources (``group_resource_configs``: Kafka's controller replaces a group's
configs too); other resource types get INVALID_REQUEST as Kafka answers them."""

from __future__ import annotations

from typing import Any

from coordinator.metadata import topic_configs
from coordinator.metadata.config_resources import GROUP

from . import group_resource_configs, resource_configs
from .context import RequestContext


async def _alter(ctx: RequestContext, resource: Any, validate_only: bool
                 ) -> resource_configs.Outcome:
    configs = [(c.name, c.value) for c in resource.configs]
    if resource.resource_type == resource_configs.TOPIC:
        return await resource_configs.alter_topic(
            ctx, resource.resource_name, topic_configs.legacy_from(configs), validate_only)
    if resource.resource_type == GROUP:
        return await group_resource_configs.alter(
            ctx, resource.resource_name,
            lambda _old, config: group_resource_configs.replaced(configs, config), validate_only)
    if resource.resource_type == resource_configs.BROKER:
        return resource_configs.alter_broker(ctx, resource.resource_name,
                                             [name for name, _ in configs])
    return resource_configs.unsupported(resource)


async def handle(ctx: RequestContext, request: Any) -> Any:
    return await resource_configs.respond(ctx, request, _alter)
