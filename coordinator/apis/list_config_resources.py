"""ListConfigResources v0-v1. v0 (ListClientMetricsResources, what
``kafka-client-metrics.sh --list`` sends) lists the CLIENT_METRICS resources; v1 lists those of
the types asked for among CLIENT_METRICS, TOPIC, BROKER and GROUP (all four when none is
named), as Kafka's ``handleListConfigResources``; other types are refused with INVALID_REQUEST.
The GROUP resources are the groups with configs (cluster metadata) and the groups of the loaded
coordinator partitions."""

from __future__ import annotations

import datetime
from typing import Any

from coordinator import telemetry
from coordinator.metadata.config_resources import CLIENT_METRICS, GROUP
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

TOPIC, BROKER = 2, 4
V1_TYPES = (CLIENT_METRICS, TOPIC, BROKER, GROUP)
_ZERO = datetime.timedelta(0)


def _names(ctx: RequestContext, resource_type: int) -> list[str]:
    if resource_type == CLIENT_METRICS:
        return telemetry.of(ctx.broker).subscriptions.names()
    if resource_type == TOPIC:
        return sorted(topic.name for topic in ctx.broker.image.topics())
    if resource_type == GROUP:
        groups = set(ctx.broker.image.configs.names(GROUP))
        for partition in ctx.broker.runtime.partitions:
            if partition.shard is not None:
                groups.update(partition.shard.groups)
        return sorted(groups)
    cluster = ctx.broker.cluster
    return [str(node) for node in (cluster.ids if cluster is not None else [ctx.broker.node_id])]


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER):
        return ctx.respond(throttle_time=_ZERO,
                           error_code=ErrorCode.cluster_authorization_failed,
                           config_resources=())
    if ctx.version == 0:
        types: tuple[int, ...] = (CLIENT_METRICS,)
    else:
        types = tuple(request.resource_types) or V1_TYPES
        if any(t not in V1_TYPES for t in types):
            return ctx.respond(throttle_time=_ZERO, error_code=ErrorCode.invalid_request,
                               config_resources=())
    resources = []
    for resource_type in dict.fromkeys(types):
        for name in _names(ctx, resource_type):
            fields: dict[str, Any] = {"resource_name": name}
            if ctx.version >= 1:
                fields["resource_type"] = resource_type
            resources.append(ctx.nested("ConfigResource", **fields))
    return ctx.respond(throttle_time=_ZERO, error_code=ErrorCode.none,
                       config_resources=tuple(resources))
