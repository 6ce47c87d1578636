"""ShareGroupHeartbeat v0 (Kafka 4.0's early access) and v1 (KIP-932), written through the
group's coordinator partition.

v1 members generate their member id (KIP-1082). v0's schema says the coordinator generates it
and answers it when the member joins: a v0 member joining with an empty member id gets one
(Kafka's form: a UUID in 22 characters of URL-safe base64); one that sends its own keeps it.
"""

from __future__ import annotations

import datetime
from typing import Any

from coordinator.groups.share.env import ShareGroupEnv, env_for
from coordinator.groups.share.heartbeat import (
    HeartbeatRequest,
    HeartbeatResponse,
    heartbeat,
    validate,
)
from coordinator.metadata.internal_topics import SHARE_GROUP_STATE_TOPIC
from coordinator.metadata.meta_properties import new_cluster_id
from coordinator.runtime import CoordinatorError

from .consumer_group_heartbeat import unauthorized
from .context import RequestContext
from .group_common import client_host


def _member_id(ctx: RequestContext, request: Any) -> str:
    member_id: str = request.member_id
    if ctx.version == 0 and not member_id and request.member_epoch == 0:
        return new_cluster_id()  # a random id in Kafka's form, as for a cluster
    return member_id


def _request(ctx: RequestContext, request: Any) -> HeartbeatRequest:
    return HeartbeatRequest(
        group_id=request.group_id, member_id=_member_id(ctx, request),
        member_epoch=request.member_epoch, rack_id=request.rack_id,
        subscribed_topic_names=request.subscribed_topic_names,
        client_id=ctx.header.client_id or "", client_host=client_host(ctx))


def _response(ctx: RequestContext, response: HeartbeatResponse) -> Any:
    assignment = None
    if response.assignment is not None:
        assignment = ctx.nested("Assignment", topic_partitions=tuple(
            ctx.nested("TopicPartitions", topic_id=topic_id, partitions=tuple(sorted(parts)))
            for topic_id, parts in sorted(response.assignment.items(),
                                          key=lambda kv: kv[0].int)))
    return ctx.respond(error_message=None, member_id=response.member_id,
                       member_epoch=response.member_epoch,
                       heartbeat_interval=datetime.timedelta(
                           milliseconds=response.heartbeat_interval_ms),
                       assignment=assignment)


async def handle(ctx: RequestContext, request: Any) -> Any:
    env: ShareGroupEnv = env_for(ctx.broker)
    denied = unauthorized(ctx, request.group_id, request.subscribed_topic_names)
    if denied is not None:
        return ctx.respond(error_code=denied, error_message=None, member_id=None,
                           member_epoch=0, assignment=None)
    try:
        hb = _request(ctx, request)
        validate(hb)
        ctx.broker.internal_topics.ensure(SHARE_GROUP_STATE_TOPIC)  # as Kafka, on first use
        runtime = ctx.broker.runtime
        answer: HeartbeatResponse = await runtime.write(
            runtime.partition_for(hb.group_id),
            lambda shard, now: heartbeat(shard, now, env, hb), name="ShareGroupHeartbeat",
            group_id=hb.group_id)
    except CoordinatorError as exc:
        return ctx.respond(error_code=exc.code, error_message=exc.message, member_id=None,
                           member_epoch=0, assignment=None)
    return _response(ctx, answer)
