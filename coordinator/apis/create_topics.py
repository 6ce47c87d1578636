"""CreateTopics v2-v7. With an authorizer, as Kafka's controller: CREATE on the cluster or on
the topic (TOPIC_AUTHORIZATION_FAILED), and the created topic's configs only with
DESCRIBE_CONFIGS on it (TopicConfigErrorCode TOPIC_AUTHORIZATION_FAILED otherwise)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from coordinator.config.definitions import TOPIC_CONFIGS
from coordinator.metadata.topic_admin import TopicError, create_topic
from coordinator.metadata.topic_configs import synonyms
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext


def _config_entries(ctx: RequestContext, overrides: dict[str, str]) -> tuple[Any, ...]:
    entries = []
    for definition in TOPIC_CONFIGS:
        head = synonyms(definition, overrides, ctx.broker.config)[0]
        entries.append(ctx.nested("CreatableTopicConfigs", name=definition.name,
                                  value=head.value, read_only=False,
                                  config_source=int(head.source), is_sensitive=False))
    return tuple(entries)


async def handle(ctx: RequestContext, request: Any) -> Any:
    counts = Counter(topic.name for topic in request.topics)
    duplicates = sorted(name for name, count in counts.items() if count > 1)
    names = [name for name in counts if name not in duplicates]
    creatable = set(names) if ctx.authorize(AclOperation.CREATE, ResourceType.CLUSTER,
                                            log_denied=False) \
        else ctx.authorized(AclOperation.CREATE, ResourceType.TOPIC, names)
    describable = ctx.authorized(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names,
                                 log_denied=False)
    results = []
    for topic in request.topics:
        if topic.name in duplicates:
            results.append(ctx.nested(
                "CreatableTopicResult", name=topic.name, error_code=ErrorCode.invalid_request,
                error_message=f"Create topics request from client `{ctx.header.client_id}` "
                f"contains multiple entries for the following topics: {', '.join(duplicates)}",
                num_partitions=-1, replication_factor=-1, configs=None))
            continue
        if topic.name not in creatable:
            results.append(ctx.nested(
                "CreatableTopicResult", name=topic.name,
                error_code=ErrorCode.topic_authorization_failed,
                error_message="Authorization failed.", num_partitions=-1,
                replication_factor=-1, configs=None))
            continue
        try:
            async with ctx.broker.metadata_log.lock:
                created, partitions, replication, configs = await create_topic(
                    ctx.broker, topic.name, topic.num_partitions, topic.replication_factor,
                    [(a.partition_index, tuple(a.broker_ids)) for a in topic.assignments],
                    {c.name: c.value for c in topic.configs}, bool(request.validate_only))
        except TopicError as exc:
            results.append(ctx.nested(
                "CreatableTopicResult", name=topic.name, error_code=exc.code,
                error_message=exc.message, num_partitions=-1, replication_factor=-1,
                configs=None))
            continue
        results.append(ctx.nested(
            "CreatableTopicResult", name=topic.name,
            topic_id=created.topic_id if created else None, error_code=ErrorCode.none,
            error_message=None, num_partitions=partitions, replication_factor=replication,
            topic_config_error_code=0 if topic.name in describable
            else int(ErrorCode.topic_authorization_failed),
            configs=_config_entries(ctx, configs)
            if ctx.version >= 5 and topic.name in describable else None))
    return ctx.respond(topics=tuple(results))
