"""IncrementalAlterConfigs and AlterConfigs for TOPIC and BROKER resources.

A topic's overrides are computed (``topic_configs.incremental`` / ``legacy``), validated as
Kafka's ``LogConfig.validate`` does (INVALID_CONFIG with its message) and written to the
metadata log before they take effect. This server has no dynamic broker configs: a BROKER
alteration is answered as Kafka answers one for configs it cannot update dynamically.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from coordinator.metadata import topic_configs
from coordinator.metadata.topic_admin import (
    TopicError,
    alter_topic_configs,
    validate_topic_configs,
)
from coordinator.metadata.topic_names import InvalidTopicName, validate_topic_name
from coordinator.security.acl import AclOperation
from protocol import ErrorCode

from .context import RequestContext
from .describe_configs import config_access_denied

TOPIC, BROKER = 2, 4
Outcome = tuple[ErrorCode, str | None]
AlterResource = Callable[[RequestContext, Any, bool], Awaitable[Outcome]]


async def respond(ctx: RequestContext, request: Any, alter: AlterResource) -> Any:
    """The response of AlterConfigs or IncrementalAlterConfigs: each resource authorized
    (ALTER_CONFIGS) and then altered by ``alter(ctx, resource, validate_only)``."""
    responses = []
    seen = Counter((r.resource_type, r.resource_name) for r in request.resources)
    for resource in request.resources:
        code: ErrorCode
        message: str | None
        denied = config_access_denied(ctx, AclOperation.ALTER_CONFIGS, resource.resource_type,
                                      resource.resource_name)
        if seen[resource.resource_type, resource.resource_name] > 1:
            code, message = ErrorCode.invalid_request, "Each resource must appear at most once."
        elif denied is not None:
            code, message = denied, None
        else:
            code, message = await alter(ctx, resource, bool(request.validate_only))
        responses.append(ctx.nested("AlterConfigsResourceResponse", error_code=code,
                                    error_message=message,
                                    resource_type=resource.resource_type,
                                    resource_name=resource.resource_name))
    return ctx.respond(responses=tuple(responses))


def unsupported(resource: Any) -> Outcome:
    return ErrorCode.invalid_request, f"Unsupported resource type: {resource.resource_type}"


async def alter_topic(ctx: RequestContext, name: str,
                      compute: Callable[[Mapping[str, str]], dict[str, str]],
                      validate_only: bool) -> Outcome:
    """Set the topic's overrides to ``compute(current overrides)``."""
    try:
        validate_topic_name(name)
    except InvalidTopicName as exc:
        return ErrorCode.invalid_topic_exception, str(exc)
    try:
        async with ctx.broker.metadata_log.lock:
            topic = ctx.broker.image.topic(name)
            if topic is None:  # as Kafka's controller: the configs are validated first
                validate_topic_configs(compute({}))
                return ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist."
            await alter_topic_configs(ctx.broker, name, compute(topic.configs), validate_only)
    except topic_configs.AlterError as exc:
        return exc.code, exc.message
    except TopicError as exc:
        return exc.code, exc.message
    return ErrorCode.none, None


def alter_broker(ctx: RequestContext, resource_name: str, names: list[str]) -> Outcome:
    """Kafka's broker-side check: the resource is this node (or empty, the cluster default),
    and every named config must be dynamically updatable; none is here."""
    if resource_name:
        try:
            node = int(resource_name)
        except ValueError:
            return (ErrorCode.invalid_request,
                    f"Node id must be an integer, but it is: {resource_name}")
        if node != ctx.node:
            return (ErrorCode.invalid_request,
                    f"Unexpected broker id, expected {ctx.node}, but received "
                    f"{resource_name}")
    if len(set(names)) != len(names):
        return ErrorCode.invalid_request, "Error due to duplicate config keys"
    if names:
        return (ErrorCode.invalid_request,
                f"Cannot update these configs dynamically: Set({', '.join(sorted(names))})")
    return ErrorCode.none, None
