"""AlterShareGroupOffsets v0 (KIP-932): the start offsets of an empty share group's partitions,
written through the group's coordinator partition."""

from __future__ import annotations

import uuid
from typing import Any

from coordinator.groups.share.offsets_admin import AlteredPartition, AlteredTopic, alter_offsets
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

INVALID_GROUP_ID_MESSAGE = "The configured groupId is invalid."
"""Kafka's ``Errors.INVALID_GROUP_ID.message()``."""


def _topic(ctx: RequestContext, topic: AlteredTopic) -> Any:
    return ctx.nested(
        "AlterShareGroupOffsetsResponseTopic", topic_name=topic.topic_name,
        topic_id=topic.topic_id, partitions=tuple(
            ctx.nested("AlterShareGroupOffsetsResponsePartition",
                       partition_index=p.partition_index, error_code=p.error,
                       error_message=p.error_message)
            for p in topic.partitions))


async def handle(ctx: RequestContext, request: Any) -> Any:
    group_id: str = request.group_id
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, group_id):
        return ctx.respond(error_code=ErrorCode.group_authorization_failed,
                           error_message=None, responses=())
    if not group_id:
        return ctx.respond(error_code=ErrorCode.invalid_group_id,
                           error_message=INVALID_GROUP_ID_MESSAGE, responses=())
    image = ctx.broker.image
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC,
                              (t.topic_name for t in request.topics))
    refused = tuple(AlteredTopic(t.topic_name, _topic_id(ctx, t.topic_name), tuple(
        AlteredPartition(p.partition_index, ErrorCode.topic_authorization_failed,
                         "Topic authorization failed.") for p in t.partitions))
        for t in request.topics if t.topic_name not in readable)
    requested = tuple((t.topic_name, tuple((p.partition_index, p.start_offset)
                                           for p in t.partitions))
                      for t in request.topics if t.topic_name in readable)
    runtime = ctx.broker.runtime
    try:
        answered: tuple[AlteredTopic, ...] = await runtime.write(
            runtime.partition_for(group_id),
            lambda shard, now: alter_offsets(shard, now, image, group_id, requested),
            name="AlterShareGroupOffsets", group_id=group_id)
    except CoordinatorError as exc:
        return ctx.respond(error_code=exc.code, error_message=exc.message, responses=())
    return ctx.respond(error_code=ErrorCode.none, error_message=None,
                       responses=tuple(_topic(ctx, t) for t in (*refused, *answered)))


def _topic_id(ctx: RequestContext, name: str) -> uuid.UUID:
    topic = ctx.broker.image.topic(name)
    return topic.topic_id if topic is not None else uuid.UUID(int=0)
