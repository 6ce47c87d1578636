"""ShareGroupDescribe v1: each group read on its coordinator partition."""

from __future__ import annotations

from typing import Any

from coordinator.groups.share.describe import GroupDescription, describe
from coordinator.groups.share.env import env_for
from coordinator.groups.share.model import Assignment
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .acl_common import TOPICS_HIDDEN, group_operations, hides_topics
from .context import RequestContext


def _assignment(ctx: RequestContext, assignment: Assignment) -> Any:
    image = ctx.broker.image
    parts = []
    for topic_id, partitions in sorted(assignment.items(), key=lambda kv: kv[0].int):
        topic = image.topic_by_id(topic_id)
        parts.append(ctx.nested("TopicPartitions", topic_id=topic_id,
                                topic_name=topic.name if topic else "",
                                partitions=tuple(sorted(partitions))))
    return ctx.nested("Assignment", topic_partitions=tuple(parts))


def _described(ctx: RequestContext, found: GroupDescription, include_ops: bool) -> Any:
    members = tuple(
        ctx.nested("Member", member_id=m.member_id, rack_id=m.rack_id,
                   member_epoch=m.member_epoch, client_id=m.client_id,
                   client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
                   assignment=_assignment(ctx, m.assigned_partitions))
        for m in found.members)
    return ctx.nested(
        "DescribedGroup", error_code=found.error, error_message=found.error_message,
        group_id=found.group_id, group_state=found.state, group_epoch=found.group_epoch,
        assignment_epoch=found.assignment_epoch, assignor_name=found.assignor,
        members=members,
        authorized_operations=group_operations(ctx, found.group_id, include_ops, found.error))


async def handle(ctx: RequestContext, request: Any) -> Any:
    runtime = ctx.broker.runtime
    assignor = env_for(ctx.broker).settings.default_assignor
    include_ops = bool(request.include_authorized_operations)
    groups = []
    for group_id in request.group_ids:
        def read(shard: Any, now: int, gid: str = group_id) -> GroupDescription:
            return describe(shard, gid, assignor)

        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(_described(ctx, GroupDescription(
                group_id, ErrorCode.group_authorization_failed), include_ops))
            continue
        try:
            found = await runtime.read(runtime.partition_for(group_id), read,
                                       name="ShareGroupDescribe")
        except CoordinatorError as exc:
            found = GroupDescription(group_id, exc.code, exc.message)
        image = ctx.broker.image
        if hides_topics(ctx, {t.name for m in found.members for topic_id in m.assigned_partitions
                              if (t := image.topic_by_id(topic_id))}):
            found = GroupDescription(group_id, ErrorCode.topic_authorization_failed,
                                     TOPICS_HIDDEN)
        groups.append(_described(ctx, found, include_ops))
    return ctx.respond(groups=tuple(groups))
