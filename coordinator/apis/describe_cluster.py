"""DescribeCluster v0-v2."""

from __future__ import annotations

from typing import Any

from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

BROKERS_ENDPOINT = 1
OMITTED = -(2**31)


def handle(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    endpoint_type = getattr(request, "endpoint_type", BROKERS_ENDPOINT)
    if endpoint_type != BROKERS_ENDPOINT:
        return ctx.respond(error_code=ErrorCode.unsupported_endpoint_type,
                           error_message="The request was sent to an endpoint of type BROKER, "
                           f"but we wanted an endpoint of type {endpoint_type}",
                           endpoint_type=endpoint_type, cluster_id=broker.cluster_id,
                           controller_id=-1, brokers=(),
                           cluster_authorized_operations=OMITTED)
    brokers = (ctx.nested("DescribeClusterBroker", broker_id=broker.node_id,
                          host=ctx.endpoint.host, port=ctx.endpoint.port, rack=broker.rack,
                          is_fenced=False),)
    controller = broker.node_id
    cluster = broker.cluster
    if cluster is not None:  # the running brokers (a stopped one is gone, not fenced)
        controller = cluster.controller_id
        brokers = tuple(
            ctx.nested("DescribeClusterBroker", broker_id=n, host=endpoint.host,
                       port=endpoint.port, rack=cluster.brokers[n].rack, is_fenced=False)
            for n in cluster.running_ids() for endpoint in (ctx.endpoint_of(n),))
    operations = OMITTED
    if request.include_cluster_authorized_operations:  # as Kafka: 0 without DESCRIBE
        operations = ctx.authorized_operations(ResourceType.CLUSTER, "kafka-cluster") \
            if ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER) else 0
    return ctx.respond(
        error_code=ErrorCode.none, error_message=None, endpoint_type=BROKERS_ENDPOINT,
        cluster_id=broker.cluster_id, controller_id=controller, brokers=brokers,
        cluster_authorized_operations=operations,
    )
