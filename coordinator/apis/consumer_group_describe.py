"""ConsumerGroupDescribe v0-v1: each group read on its coordinator partition."""

from __future__ import annotations

import asyncio
from typing import Any

from coordinator.groups.consumer.assignment_forms import by_topic_id
from coordinator.groups.consumer.describe import GroupDescription, describe
from coordinator.groups.consumer.env import env_for
from coordinator.groups.consumer.model import Assignment
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .acl_common import TOPICS_HIDDEN, group_operations, hides_topics
from .context import RequestContext

CONSUMER_MEMBER_TYPE = 1


def _assignment(ctx: RequestContext, assignment: Assignment) -> Any:
    image = ctx.broker.image
    parts = []
    for topic_id, partitions in sorted(assignment.items(), key=by_topic_id):
        topic = image.topic_by_id(topic_id)
        parts.append(ctx.nested("TopicPartitions", topic_id=topic_id,
                                topic_name=topic.name if topic else "",
                                partitions=tuple(sorted(partitions))))
    return ctx.nested("Assignment", topic_partitions=tuple(parts))


def _topic_names(ctx: RequestContext, found: GroupDescription) -> set[str]:
    """The topics the members' assignments and targets name."""
    ids = {topic_id for m, target in found.members
           for topic_id in (*m.assigned_partitions, *target)}
    return {t.name for topic_id in ids if (t := ctx.broker.image.topic_by_id(topic_id))}


MEMBERS_PER_TURN = 100
"""A large group's description is built this many members at a time between turns of the event
loop (1,000 members with 50 partitions each take 15-40 ms to build)."""


async def _described(ctx: RequestContext, found: GroupDescription, include_ops: bool) -> Any:
    built: dict[int, Any] = {}  # by assignment object: a reconciled member's is its target's

    def assignment(of: Assignment) -> Any:
        key = id(of)  # the objects live in ``found`` for the whole call
        if key not in built:
            built[key] = _assignment(ctx, of)
        return built[key]

    members = []
    for i, (m, target) in enumerate(found.members, start=1):
        members.append(ctx.nested(
            "Member", member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
            member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=m.subscribed_topic_names,
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=assignment(m.assigned_partitions), target_assignment=assignment(target),
            member_type=CONSUMER_MEMBER_TYPE))
        if i % MEMBERS_PER_TURN == 0:
            await asyncio.sleep(0)
    return ctx.nested(
        "DescribedGroup", error_code=found.error, error_message=found.error_message,
        group_id=found.group_id, group_state=found.state.value, group_epoch=found.group_epoch,
        assignment_epoch=found.assignment_epoch, assignor_name=found.assignor,
        members=tuple(members),
        authorized_operations=group_operations(ctx, found.group_id, include_ops, found.error))


async def handle(ctx: RequestContext, request: Any) -> Any:
    runtime = ctx.broker.runtime
    default = env_for(ctx.broker).settings.default_assignor
    include_ops = bool(request.include_authorized_operations)
    groups = []
    for group_id in request.group_ids:
        # a def, not a lambda: mypy cannot infer a lambda with a default argument
        def read(shard: Any, now: int, gid: str = group_id) -> GroupDescription:
            return describe(shard, gid, default)

        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            found = GroupDescription(group_id, ErrorCode.group_authorization_failed)
            groups.append(await _described(ctx, found, include_ops))
            continue
        try:
            found = await runtime.read(runtime.partition_for(group_id), read,
                                       name="ConsumerGroupDescribe")
        except CoordinatorError as exc:
            found = GroupDescription(group_id, exc.code, exc.message)
        if hides_topics(ctx, _topic_names(ctx, found)):
            found = GroupDescription(group_id, ErrorCode.topic_authorization_failed,
                                     TOPICS_HIDDEN)
        groups.append(await _described(ctx, found, include_ops))
    return ctx.respond(groups=tuple(groups))
