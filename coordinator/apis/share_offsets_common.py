"""What AlterShareGroupOffsets and DeleteShareGroupOffsets (KIP-932) do alike: authorize the
group, refuse an empty group id, answer TOPIC_AUTHORIZATION_FAILED for topics the principal
cannot read, and write the rest through the group's coordinator partition."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from coordinator.metadata.image import MetadataImage
from coordinator.runtime import CoordinatorError, Result
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

INVALID_GROUP_ID_MESSAGE = "The configured groupId is invalid."
"""Kafka's ``Errors.INVALID_GROUP_ID.message()``."""
TOPIC_AUTHORIZATION_FAILED_MESSAGE = "Topic authorization failed."

T = TypeVar("T")
"""One topic of the answer, as the group layer returns it."""


async def write_share_offsets(
    ctx: RequestContext, request: Any, operation: AclOperation, name: str,
    refused: Callable[[Any], T],
    write: Callable[[Any, int, MetadataImage, str, Sequence[Any]], Result],
    render: Callable[[T], Any],
) -> Any:
    """``request.topics`` the principal may read go to ``write(shard, now, image, group_id,
    topics)``; the others are answered by ``refused(topic)``; each answered topic is put on
    the wire by ``render``."""
    group_id: str = request.group_id
    if not ctx.authorize(operation, ResourceType.GROUP, group_id):
        return ctx.respond(error_code=ErrorCode.group_authorization_failed,
                           error_message=None, responses=())
    if not group_id:
        return ctx.respond(error_code=ErrorCode.invalid_group_id,
                           error_message=INVALID_GROUP_ID_MESSAGE, responses=())
    image = ctx.broker.image
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC,
                              (t.topic_name for t in request.topics))
    denied = tuple(refused(t) for t in request.topics if t.topic_name not in readable)
    allowed = tuple(t for t in request.topics if t.topic_name in readable)
    runtime = ctx.broker.runtime
    try:
        answered: tuple[T, ...] = await runtime.write(
            runtime.partition_for(group_id),
            lambda shard, now: write(shard, now, image, group_id, allowed),
            name=name, group_id=group_id)
    except CoordinatorError as exc:
        return ctx.respond(error_code=exc.code, error_message=exc.message, responses=())
    return ctx.respond(error_code=ErrorCode.none, error_message=None,
                       responses=tuple(render(t) for t in (*denied, *answered)))
