"""DescribeShareGroupOffsets v0-v1 (KIP-932; v1 adds the lag): each group read on its
coordinator partition."""

from __future__ import annotations

import uuid
from typing import Any

from coordinator.groups.share.env import env_for
from coordinator.groups.share.offsets_admin import (
    DescribedPartition,
    DescribedTopic,
    describe_offsets,
)
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext


def _topic(ctx: RequestContext, topic: DescribedTopic) -> Any:
    return ctx.nested(
        "DescribeShareGroupOffsetsResponseTopic", topic_name=topic.topic_name,
        topic_id=topic.topic_id, partitions=tuple(
            ctx.nested("DescribeShareGroupOffsetsResponsePartition",
                       partition_index=p.partition_index, start_offset=p.start_offset,
                       leader_epoch=p.leader_epoch, lag=p.lag, error_code=p.error,
                       error_message=p.error_message)
            for p in topic.partitions))


def _group(ctx: RequestContext, group_id: str, topics: tuple[Any, ...] = (),
           error: ErrorCode = ErrorCode.none, message: str | None = None) -> Any:
    return ctx.nested("DescribeShareGroupOffsetsResponseGroup", group_id=group_id,
                      topics=topics, error_code=error, error_message=message)


async def handle(ctx: RequestContext, request: Any) -> Any:
    runtime = ctx.broker.runtime
    image = ctx.broker.image
    logs = env_for(ctx.broker).logs
    groups = []
    for wanted in request.groups:
        group_id: str = wanted.group_id
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(_group(ctx, group_id, error=ErrorCode.group_authorization_failed))
            continue
        if wanted.topics is not None and not wanted.topics:
            groups.append(_group(ctx, group_id))  # nothing asked, nothing read (as Kafka)
            continue
        requested = None if wanted.topics is None else tuple(
            (t.topic_name, tuple(t.partitions)) for t in wanted.topics)
        # as Kafka: topics the principal may not DESCRIBE are refused, or left out of "all"
        visible = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                 (name for name, _ in requested or ()))
        refused = tuple(DescribedTopic(name, uuid.UUID(int=0), tuple(
            DescribedPartition(p, start_offset=-1, error=ErrorCode.topic_authorization_failed,
                               error_message="Topic authorization failed.")
            for p in partitions)) for name, partitions in requested or ()
            if name not in visible)
        if requested is not None:
            requested = tuple((name, parts) for name, parts in requested if name in visible)

        def read(shard: Any, now: int, gid: str = group_id,
                 req: Any = requested) -> tuple[DescribedTopic, ...]:
            return describe_offsets(shard, now, image, logs, gid, req)

        try:
            found = await runtime.read(runtime.partition_for(group_id), read,
                                       name="DescribeShareGroupOffsets", group_id=group_id)
        except CoordinatorError as exc:
            groups.append(_group(ctx, group_id, error=exc.code, message=exc.message))
            continue
        if wanted.topics is None and ctx.broker.authorizer is not None:
            shown = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                   (t.topic_name for t in found), log_denied=False)
            found = tuple(t for t in found if t.topic_name in shown)
        groups.append(_group(ctx, group_id, tuple(_topic(ctx, t) for t in (*found, *refused))))
    return ctx.respond(groups=tuple(groups))
