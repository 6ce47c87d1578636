"""CreatePartitions v0-v3 (ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from coordinator.metadata.topic_admin import TopicError, add_partitions
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext


async def handle(ctx: RequestContext, request: Any) -> Any:
    counts = Counter(topic.name for topic in request.topics)
    alterable = ctx.authorized(AclOperation.ALTER, ResourceType.TOPIC,
                               [name for name, count in counts.items() if count == 1])
    results = []
    for topic in request.topics:
        if counts[topic.name] > 1:
            results.append(ctx.nested("CreatePartitionsTopicResult", name=topic.name,
                                      error_code=ErrorCode.invalid_request,
                                      error_message="Duplicate topic in request."))
            continue
        if topic.name not in alterable:
            results.append(ctx.nested("CreatePartitionsTopicResult", name=topic.name,
                                      error_code=ErrorCode.topic_authorization_failed,
                                      error_message=None))
            continue
        assignments = (None if topic.assignments is None
                       else [tuple(a.broker_ids) for a in topic.assignments])
        try:
            async with ctx.broker.metadata_log.lock:
                await add_partitions(ctx.broker, topic.name, topic.count, assignments,
                                     bool(request.validate_only))
        except TopicError as exc:
            results.append(ctx.nested("CreatePartitionsTopicResult", name=topic.name,
                                      error_code=exc.code, error_message=exc.message))
            continue
        results.append(ctx.nested("CreatePartitionsTopicResult", name=topic.name,
                                  error_code=ErrorCode.none, error_message=None))
    return ctx.respond(results=tuple(results))
