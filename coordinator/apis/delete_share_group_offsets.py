"""DeleteShareGroupOffsets v0 (KIP-932): an empty share group's state of whole topics removed,
through the group's coordinator partition."""

from __future__ import annotations

from typing import Any

from coordinator.groups.share.offsets_admin import DeletedTopic, delete_offsets
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .alter_share_group_offsets import INVALID_GROUP_ID_MESSAGE
from .context import RequestContext


def _topic(ctx: RequestContext, topic: DeletedTopic) -> Any:
    return ctx.nested("DeleteShareGroupOffsetsResponseTopic", topic_name=topic.topic_name,
                      topic_id=topic.topic_id, error_code=topic.error,
                      error_message=topic.error_message)


async def handle(ctx: RequestContext, request: Any) -> Any:
    group_id: str = request.group_id
    if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, group_id):
        return ctx.respond(error_code=ErrorCode.group_authorization_failed,
                           error_message=None, responses=())
    if not group_id:
        return ctx.respond(error_code=ErrorCode.invalid_group_id,
                           error_message=INVALID_GROUP_ID_MESSAGE, responses=())
    image = ctx.broker.image
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC,
                              (t.topic_name for t in request.topics))
    refused = tuple(DeletedTopic(t.topic_name, error=ErrorCode.topic_authorization_failed,
                                 error_message="Topic authorization failed.")
                    for t in request.topics if t.topic_name not in readable)
    names = tuple(t.topic_name for t in request.topics if t.topic_name in readable)
    runtime = ctx.broker.runtime
    try:
        answered: tuple[DeletedTopic, ...] = await runtime.write(
            runtime.partition_for(group_id),
            lambda shard, now: delete_offsets(shard, now, image, group_id, names),
            name="DeleteShareGroupOffsets", group_id=group_id)
    except CoordinatorError as exc:
        return ctx.respond(error_code=exc.code, error_message=exc.message, responses=())
    return ctx.respond(error_code=ErrorCode.none, error_message=None,
                       responses=tuple(_topic(ctx, t) for t in (*refused, *answered)))
