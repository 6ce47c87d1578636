"""FindCoordinator v0-v6: this node coordinates every group and every transactional id (and
batched keys from v4); with ``cluster.brokers`` > 1, the leader of the key's coordinator
partition does."""

from __future__ import annotations

from typing import Any

from coordinator.metadata.internal_topics import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

GROUP, TRANSACTION, SHARE = 0, 1, 2


def _locate(ctx: RequestContext, key: str, key_type: int) -> tuple[ErrorCode, str | None]:
    if key_type == GROUP:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, key):
            return ErrorCode.group_authorization_failed, "Group authorization failed."
        ctx.broker.internal_topics.ensure(GROUP_METADATA_TOPIC)  # as Kafka, on first use
        return ErrorCode.none, None
    if key_type == SHARE and ctx.version >= 6:
        # Share coordinator keys are for brokers: CLUSTER_ACTION on the cluster, as Kafka
        if not ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER):
            return ErrorCode.cluster_authorization_failed, "Cluster authorization failed."
        # Share-partition keys are "groupId:topicId:partition".
        parts = key.rsplit(":", 2)
        if len(parts) == 3 and parts[0] and parts[2].lstrip("-").isdigit():
            return ErrorCode.none, None
        return ErrorCode.invalid_request, f"Invalid share coordinator key: {key}"
    if key_type == TRANSACTION:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
            return (ErrorCode.transactional_id_authorization_failed,
                    "Transactional Id authorization failed.")
        ctx.broker.internal_topics.ensure(TRANSACTION_STATE_TOPIC)
        return ErrorCode.none, None
    return ErrorCode.invalid_request, f"Unknown coordinator key type {key_type}"


def _coordinator(ctx: RequestContext, key: str, key_type: int) -> tuple[int, str, int]:
    """(node, host, port) of the key's coordinator: this node, or with ``cluster.brokers`` > 1
    the leader of the key's coordinator partition (a share-partition key's: its group's)."""
    cluster = ctx.broker.cluster
    if cluster is None:
        return ctx.broker.node_id, ctx.endpoint.host, ctx.endpoint.port
    if key_type == SHARE:
        key = key.rsplit(":", 2)[0]
    node = cluster.coordinator(ctx.broker.runtime.partition_for(key)).leader
    endpoint = ctx.endpoint_of(node)
    return node, endpoint.host, endpoint.port


def handle(ctx: RequestContext, request: Any) -> Any:
    key_type = getattr(request, "key_type", GROUP)
    if ctx.version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            error, message = _locate(ctx, key, key_type)
            found = error is ErrorCode.none
            node, host, port = _coordinator(ctx, key, key_type) if found else (-1, "", -1)
            coordinators.append(ctx.nested(
                "Coordinator", key=key, node_id=node, host=host, port=port, error_code=error,
                error_message=message))
        return ctx.respond(coordinators=tuple(coordinators))
    error, message = _locate(ctx, request.key, key_type)
    if error is not ErrorCode.none:
        return ctx.respond(error_code=error, error_message=message, node_id=-1, host="", port=-1)
    node, host, port = _coordinator(ctx, request.key, key_type)
    return ctx.respond(error_code=ErrorCode.none, error_message=None, node_id=node, host=host,
                       port=port)
