"""AlterConfigs v0-v2 (the legacy API: each resource's configs replaced as a whole) for TOPIC
and BROKER resources; other resource types get INVALID_REQUEST as Kafka answers them."""

from __future__ import annotations

from typing import Any

from coordinator.metadata import topic_configs
from coordinator.security.acl import AclOperation
from protocol import ErrorCode

from . import resource_configs
from .context import RequestContext
from .describe_configs import config_access_denied


async def handle(ctx: RequestContext, request: Any) -> Any:
    responses = []
    for resource in request.resources:
        code: ErrorCode
        message: str | None
        denied = config_access_denied(ctx, AclOperation.ALTER_CONFIGS, resource.resource_type,
                                      resource.resource_name)
        configs = [(c.name, c.value) for c in resource.configs]
        if denied is not None:
            code, message = denied, None
        elif resource.resource_type == resource_configs.TOPIC:
            code, message = await resource_configs.alter_topic(
                ctx, resource.resource_name, topic_configs.legacy_from(configs),
                request.validate_only)
        elif resource.resource_type == resource_configs.BROKER:
            code, message = resource_configs.alter_broker(
                ctx, resource.resource_name, [name for name, _ in configs])
        else:
            code, message = (ErrorCode.invalid_request,
                             f"Unsupported resource type: {resource.resource_type}")
        responses.append(ctx.nested("AlterConfigsResourceResponse", error_code=code,
                                    error_message=message,
                                    resource_type=resource.resource_type,
                                    resource_name=resource.resource_name))
    return ctx.respond(responses=tuple(responses))
