"""AlterShareGroupOffsets v0 (KIP-932): the start offsets of an empty share group's partitions,
written through the group's coordinator partition."""

from __future__ import annotations

import uuid
from typing import Any

from coordinator.groups.share.offsets_admin import AlteredPartition, AlteredTopic, alter_offsets
from coordinator.security.acl import AclOperation
from protocol import ErrorCode

from .context import RequestContext
from .share_offsets_common import TOPIC_AUTHORIZATION_FAILED_MESSAGE, write_share_offsets


def _topic(ctx: RequestContext, topic: AlteredTopic) -> Any:
    return ctx.nested(
        "AlterShareGroupOffsetsResponseTopic", topic_name=topic.topic_name,
        topic_id=topic.topic_id, partitions=tuple(
            ctx.nested("AlterShareGroupOffsetsResponsePartition",
                       partition_index=p.partition_index, error_code=p.error,
                       error_message=p.error_message)
            for p in topic.partitions))


def _refused(ctx: RequestContext, topic: Any) -> AlteredTopic:
    return AlteredTopic(topic.topic_name, _topic_id(ctx, topic.topic_name), tuple(
        AlteredPartition(p.partition_index, ErrorCode.topic_authorization_failed,
                         TOPIC_AUTHORIZATION_FAILED_MESSAGE) for p in topic.partitions))


async def handle(ctx: RequestContext, request: Any) -> Any:
    return await write_share_offsets(
        ctx, request, AclOperation.READ, "AlterShareGroupOffsets",
        lambda t: _refused(ctx, t),
        lambda shard, now, image, group_id, topics: alter_offsets(
            shard, now, image, group_id,
            tuple((t.topic_name, tuple((p.partition_index, p.start_offset)
                                       for p in t.partitions)) for t in topics)),
        lambda t: _topic(ctx, t))


def _topic_id(ctx: RequestContext, name: str) -> uuid.UUID:
    topic = ctx.broker.image.topic(name)
    return topic.topic_id if topic is not None else uuid.UUID(int=0)
