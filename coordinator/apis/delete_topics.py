"""DeleteTopics v1-v6 (by name, and by topic id from v6)."""

from __future__ import annotations

from typing import Any

from coordinator.metadata.topic_admin import TopicError, delete_topic
from protocol import ErrorCode

from .context import RequestContext


def _wanted(ctx: RequestContext, request: Any) -> list[tuple[str | None, Any]]:
    if ctx.version >= 6:
        return [(t.name, t.topic_id) for t in request.topics]
    return [(name, None) for name in request.topic_names]


async def handle(ctx: RequestContext, request: Any) -> Any:
    image = ctx.broker.image
    results = []
    for name, topic_id in _wanted(ctx, request):
        if name is None and topic_id is not None:
            found = image.topic_by_id(topic_id)
            if found is None:
                results.append(ctx.nested("DeletableTopicResult", name=None, topic_id=topic_id,
                                          error_code=ErrorCode.unknown_topic_id,
                                          error_message="This server does not host this topic ID."))
                continue
            name = found.name
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
