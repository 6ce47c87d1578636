"""DeleteTopics v1-v6 (by name, and by topic id from v6). With an authorizer, as Kafka's
controller: DELETE on the cluster, or DELETE on the topic; a topic the principal may not even
DESCRIBE is refused before its existence is checked, and its name is not echoed for an id."""

from __future__ import annotations

from typing import Any

from coordinator.metadata.topic_admin import TopicError, delete_topic
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext


def _wanted(ctx: RequestContext, request: Any) -> list[tuple[str | None, Any]]:
    if ctx.version >= 6:
        return [(t.name, t.topic_id) for t in request.topics]
    return [(name, None) for name in request.topic_names]


async def handle(ctx: RequestContext, request: Any) -> Any:
    image = ctx.broker.image
    results = []
    everything = ctx.authorize(AclOperation.DELETE, ResourceType.CLUSTER, log_denied=False)
    for name, topic_id in _wanted(ctx, request):
        if name is None and topic_id is not None:
            found = image.topic_by_id(topic_id)
            if found is None:
                results.append(ctx.nested("DeletableTopicResult", name=None, topic_id=topic_id,
                                          error_code=ErrorCode.unknown_topic_id,
                                          error_message="This server does not host this topic ID."))
                continue
            name = found.name
        denied, shown = (False, name) if everything else _denied(ctx, name or "",
                                                                topic_id is not None)
        if denied:
            results.append(ctx.nested("DeletableTopicResult", name=shown, topic_id=topic_id,
                                      error_code=ErrorCode.topic_authorization_failed,
                                      error_message="Topic authorization failed."))
            continue
        try:
            async with ctx.broker.metadata_log.lock:
                deleted = await delete_topic(ctx.broker, name or "")
        except TopicError as exc:
            results.append(ctx.nested("DeletableTopicResult", name=name, topic_id=topic_id,
                                      error_code=exc.code, error_message=exc.message))
            continue
        results.append(ctx.nested("DeletableTopicResult", name=name, topic_id=deleted.topic_id,
                                  error_code=ErrorCode.none, error_message=None))
    return ctx.respond(responses=tuple(results))


def _denied(ctx: RequestContext, name: str, by_id: bool) -> tuple[bool, str | None]:
    """(refused, the name to answer with): a topic asked for by id keeps its name secret
    from a principal that may not DESCRIBE it."""
    describable = ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name)
    if not by_id and not describable:
        return True, name
    if not by_id and ctx.broker.image.topic(name) is None:
        return False, name  # an unknown name: UNKNOWN_TOPIC_OR_PARTITION, as Kafka
    if ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, name):
        return False, name
    return True, name if describable else None
