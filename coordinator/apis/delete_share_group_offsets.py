"""DeleteShareGroupOffsets v0 (KIP-932): an empty share group's state of whole topics removed,
through the group's coordinator partition."""

from __future__ import annotations

from typing import Any

from coordinator.groups.share.offsets_admin import DeletedTopic, delete_offsets
from coordinator.security.acl import AclOperation
from protocol import ErrorCode

from .context import RequestContext
from .share_offsets_common import TOPIC_AUTHORIZATION_FAILED_MESSAGE, write_share_offsets


def _topic(ctx: RequestContext, topic: DeletedTopic) -> Any:
    return ctx.nested("DeleteShareGroupOffsetsResponseTopic", topic_name=topic.topic_name,
                      topic_id=topic.topic_id, error_code=topic.error,
                      error_message=topic.error_message)


async def handle(ctx: RequestContext, request: Any) -> Any:
    return await write_share_offsets(
        ctx, request, AclOperation.DELETE, "DeleteShareGroupOffsets",
        lambda t: DeletedTopic(t.topic_name, error=ErrorCode.topic_authorization_failed,
                               error_message=TOPIC_AUTHORIZATION_FAILED_MESSAGE),
        lambda shard, now, image, group_id, topics: delete_offsets(
            shard, now, image, group_id, tuple(t.topic_name for t in topics)),
        lambda t: _topic(ctx, t))
