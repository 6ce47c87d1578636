"""ConsumerGroupPrepareAssignment v0 (the KIP-848 draft, seed 003; API key 8480, served with
``group.consumer.client.assignors.enable``): the chosen member reads the group state its
client-side assignor computes the target from (``coordinator.groups.consumer.client_assignor``)."""

from __future__ import annotations

from typing import Any

from coordinator.groups.consumer.assignment_forms import by_topic_id
from coordinator.groups.consumer.client_assignor import GroupState, prepare
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext
from .group_common import run_on_group_or_error


def _state(ctx: RequestContext, state: GroupState) -> Any:
    members = []
    for m in state.members:
        assignor = m.assignor
        members.append(ctx.nested(
            "Member", member_id=m.member.member_id, member_epoch=m.member.member_epoch,
            instance_id=m.member.instance_id, rack_id=m.member.rack_id,
            client_id=m.member.client_id, client_host=m.member.client_host,
            subscribed_topic_ids=tuple(sorted(m.subscribed_topic_ids, key=str)),
            assignor=ctx.nested("Assignor", reason=0 if assignor is None else assignor.reason,
                                version=-1 if assignor is None else assignor.version,
                                metadata=b"" if assignor is None else assignor.metadata),
            topic_partitions=tuple(
                ctx.nested("TopicPartitions", topic_id=topic_id, partitions=tuple(sorted(p)))
                for topic_id, p in sorted(m.target.items(), key=by_topic_id))))
    return ctx.respond(
        group_epoch=state.group_epoch, assignor_name=state.assignor, members=tuple(members),
        topics=tuple(ctx.nested("TopicMetadata", topic_id=t.topic_id, topic_name=t.name,
                                num_partitions=t.partitions) for t in state.topics))


def refused(ctx: RequestContext, request: Any) -> Any | None:
    """The answer to a draft request refused before it reaches the group (READ on the group,
    as the heartbeat; an empty group or member id), or None (Install checks the same)."""
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ctx.respond(error_code=ErrorCode.group_authorization_failed)
    if not request.group_id or not request.member_id:
        return ctx.respond(error_code=ErrorCode.invalid_request,
                           error_message="GroupId and MemberId can't be empty.")
    return None


async def handle(ctx: RequestContext, request: Any) -> Any:
    answer = refused(ctx, request)
    if answer is not None:
        return answer
    outcome = await run_on_group_or_error(
        ctx, request.group_id,
        lambda shard, now: prepare(shard, now, request.group_id, request.member_id,
                                   request.member_epoch),
        "ConsumerGroupPrepareAssignment")
    if isinstance(outcome, CoordinatorError):
        return ctx.respond(error_code=outcome.code, error_message=outcome.message)
    return _state(ctx, outcome)
