"""Metadata: this node is the only broker and leads every partition; with ``cluster.brokers``
> 1, the running brokers and each partition's leader, epoch, replicas and ISR as the cluster
has them (``coordinator/cluster/``).

With an authorizer, as Kafka: topics the principal may not DESCRIBE are left out of "all
topics" and answered TOPIC_AUTHORIZATION_FAILED when asked for (whether they exist or not);
auto-creation needs CREATE on the cluster or on the topic.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from typing import Any

from coordinator.cluster import Cluster
from coordinator.metadata.image import TopicImage
from coordinator.metadata.topic_admin import TopicError, create_topic
from coordinator.metadata.topic_names import (
    INTERNAL_TOPICS,
    InvalidTopicName,
    validate_topic_name,
)
from coordinator.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
_NO_ID = uuid.UUID(int=0)
LEADER_EPOCH = 0


def _cluster_partitions(ctx: RequestContext, cluster: Cluster, topic: TopicImage
                        ) -> tuple[Any, ...]:
    """Each partition as the cluster has it: its leader, leader epoch, replicas, the running
    ones as the ISR and the stopped ones as offline."""
    out = []
    running = cluster.running
    for index in range(topic.partitions):
        state: Any = cluster.internal_partition(index) if topic.is_internal \
            else cluster.partition(topic.name, index)
        replicas = state.replicas
        out.append(ctx.nested(
            "MetadataResponsePartition", error_code=ErrorCode.none, partition_index=index,
            leader_id=state.leader, leader_epoch=state.leader_epoch, replica_nodes=replicas,
            isr_nodes=tuple(n for n in replicas if running(n)),
            offline_replicas=tuple(n for n in replicas if not running(n))))
    return tuple(out)


def _topic_entry(ctx: RequestContext, topic: TopicImage, include_ops: bool) -> Any:
    node = ctx.broker.node_id
    cluster = ctx.broker.cluster
    partitions = tuple(
        ctx.nested("MetadataResponsePartition", error_code=ErrorCode.none, partition_index=index,
                   leader_id=node, leader_epoch=LEADER_EPOCH, replica_nodes=(node,),
                   isr_nodes=(node,), offline_replicas=())
        for index in range(topic.partitions)
    ) if cluster is None else _cluster_partitions(ctx, cluster, topic)
    return ctx.nested(
        "MetadataResponseTopic", error_code=ErrorCode.none, name=topic.name,
        topic_id=topic.topic_id, is_internal=topic.is_internal, partitions=partitions,
        topic_authorized_operations=ctx.authorized_operations(ResourceType.TOPIC, topic.name)
        if include_ops else AUTHORIZED_OPERATIONS_OMITTED,
    )


def _error_entry(ctx: RequestContext, name: str | None, code: ErrorCode, topic_id: Any = None,
                 ) -> Any:
    return ctx.nested("MetadataResponseTopic", error_code=code, name=name, topic_id=topic_id,
                      partitions=(), topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


def _wants_all_topics(ctx: RequestContext, request: Any) -> bool:
    # v0: an empty list means all topics; v1+: null means all, empty means none.
    if ctx.version == 0:
        return not request.topics
    return request.topics is None


def _may_auto_create(ctx: RequestContext, request: Any) -> bool:
    # v0-v3 have no flag: those versions always ask for auto-creation.
    return bool(getattr(request, "allow_auto_topic_creation", True)
                and ctx.broker.config["auto.create.topics.enable"])


def _missing(ctx: RequestContext, request: Any) -> list[str]:
    """Valid topic names the request asks for by name that do not exist."""
    if _wants_all_topics(ctx, request) or not _may_auto_create(ctx, request):
        return []
    missing = []
    for wanted in request.topics:
        name = wanted.name
        if name is None or ctx.broker.image.topic(name) is not None:
            continue
        if name in INTERNAL_TOPICS:  # created as Kafka creates it, never as a data topic
            ctx.broker.internal_topics.ensure(name)
            continue
        try:
            validate_topic_name(name)
        except InvalidTopicName:
            continue
        missing.append(name)
    return missing


def _unauthorized(ctx: RequestContext, request: Any, missing: list[str]) -> set[str]:
    """The topics asked for by name that the principal may not DESCRIBE, and the missing ones
    it may not create (Kafka's ``handleTopicMetadataRequest``)."""
    if ctx.broker.authorizer is None or _wants_all_topics(ctx, request):
        return set()
    named = [t.name for t in request.topics if t.name is not None]
    visible = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, named)
    denied = {name for name in named if name not in visible}
    wanted = [name for name in missing if name not in denied]
    if wanted and not ctx.authorize(AclOperation.CREATE, ResourceType.CLUSTER,
                                    log_denied=False):
        creatable = ctx.authorized(AclOperation.CREATE, ResourceType.TOPIC, wanted)
        denied.update(name for name in wanted if name not in creatable)
    return denied


def handle(ctx: RequestContext, request: Any) -> Any | Awaitable[Any]:
    if ctx.version < 12 and not _wants_all_topics(ctx, request) and any(
            wanted.name is None or getattr(wanted, "topic_id", None) not in (None, _NO_ID)
            for wanted in request.topics):
        # Kafka: "Topic name can not be null for version 10" / "Topic IDs are not supported
        # in requests for version 10" (InvalidRequestException), each topic answered with it
        return ctx.respond(brokers=(), cluster_id=ctx.broker.cluster_id,
                           controller_id=ctx.broker.node_id, error_code=ErrorCode.none,
                           cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
                           topics=tuple(_error_entry(ctx, wanted.name or "",
                                                     ErrorCode.invalid_request)
                                        for wanted in request.topics))
    missing = _missing(ctx, request)
    denied = _unauthorized(ctx, request, missing)
    errors = dict.fromkeys(denied, ErrorCode.topic_authorization_failed)
    missing = [name for name in missing if name not in denied]
    if missing:
        return _auto_create_then_answer(ctx, request, missing, errors)
    return _answer(ctx, request, errors)


async def _auto_create_then_answer(ctx: RequestContext, request: Any,
                                   missing: list[str], errors: dict[str, ErrorCode]) -> Any:
    async with ctx.broker.metadata_log.lock:
        for name in dict.fromkeys(missing):
            if ctx.broker.image.topic(name) is not None:
                continue  # created meanwhile
            try:
                await create_topic(ctx.broker, name, -1, -1)
            except TopicError as exc:
                errors[name] = exc.code
    return _answer(ctx, request, errors)


def _answer(ctx: RequestContext, request: Any, errors: dict[str, ErrorCode]) -> Any:
    broker = ctx.broker
    image = broker.image
    include_ops = bool(getattr(request, "include_topic_authorized_operations", False))
    entries: list[Any] = []
    if _wants_all_topics(ctx, request):
        topics = image.topics()
        if broker.authorizer is not None:
            visible = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                     (t.name for t in topics), log_denied=False)
            topics = [t for t in topics if t.name in visible]
        entries = [_topic_entry(ctx, t, include_ops) for t in topics]
    else:
        for wanted in request.topics:
            topic_id = getattr(wanted, "topic_id", None)
            if wanted.name is None and topic_id is not None and topic_id.int != 0:
                found = image.topic_by_id(topic_id)
                if found is not None and not ctx.authorize(AclOperation.DESCRIBE,
                                                           ResourceType.TOPIC, found.name):
                    # topic ids are not secret: the id is echoed, the name is not
                    entries.append(_error_entry(ctx, None, ErrorCode.topic_authorization_failed,
                                                topic_id))
                    continue
                entries.append(_topic_entry(ctx, found, include_ops) if found else
                               _error_entry(ctx, None, ErrorCode.unknown_topic_id, topic_id))
                continue
            entries.append(_named_entry(ctx, wanted.name, include_ops, errors))
    node = broker.node_id
    brokers = (ctx.nested("MetadataResponseBroker", node_id=node, host=ctx.endpoint.host,
                          port=ctx.endpoint.port, rack=broker.rack),)
    cluster = broker.cluster
    if cluster is not None:  # the running brokers, as Kafka lists the unfenced ones
        node = cluster.controller_id
        brokers = tuple(
            ctx.nested("MetadataResponseBroker", node_id=n, host=endpoint.host,
                       port=endpoint.port, rack=cluster.brokers[n].rack)
            for n in cluster.running_ids() for endpoint in (ctx.endpoint_of(n),))
    cluster_ops = AUTHORIZED_OPERATIONS_OMITTED
    if getattr(request, "include_cluster_authorized_operations", False):  # v8-v10
        cluster_ops = ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME) \
            if ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER) else 0
    return ctx.respond(brokers=brokers, cluster_id=broker.cluster_id, controller_id=node,
                       topics=tuple(entries), error_code=ErrorCode.none,
                       cluster_authorized_operations=cluster_ops)


def _named_entry(ctx: RequestContext, name: str | None, include_ops: bool,
                 errors: dict[str, ErrorCode]) -> Any:
    try:
        validate_topic_name(name)
    except InvalidTopicName:
        return _error_entry(ctx, name, ErrorCode.invalid_topic_exception)
    assert name is not None
    if errors.get(name) is ErrorCode.topic_authorization_failed:
        return _error_entry(ctx, name, ErrorCode.topic_authorization_failed)
    topic = ctx.broker.image.topic(name)
    if topic is not None:
        return _topic_entry(ctx, topic, include_ops)
    return _error_entry(ctx, name, errors.get(name, ErrorCode.unknown_topic_or_partition))
