"""OffsetForLeaderEpoch v2-v4 (KIP-320): where a leader epoch ends, so that a client whose
partition's leader changed can check its position (a consumer) or its sequence (a producer)
against the log. The latest epoch ends at the log end offset; an older one where the next one
starts; one newer than the leader's is unknown (-1, -1), as Kafka's ``LeaderEpochFileCache``
answers. With one broker every partition has epoch 0 from offset 0; with ``cluster.brokers`` >
1 the epochs are the cluster's (``coordinator/cluster/model.py``), and the partition's leader
answers (NOT_LEADER_OR_FOLLOWER elsewhere; FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a
current leader epoch older or newer than the leader's)."""

from __future__ import annotations

from typing import Any

from coordinator import topiclog
from coordinator.cluster.model import UNDEFINED_EPOCH, UNDEFINED_OFFSET
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from . import leadership
from .context import RequestContext


def _answer(ctx: RequestContext, index: int, code: ErrorCode, epoch: int = UNDEFINED_EPOCH,
            end_offset: int = UNDEFINED_OFFSET) -> Any:
    return ctx.nested("EpochEndOffset", error_code=code, partition=index, leader_epoch=epoch,
                      end_offset=end_offset)


def handle(ctx: RequestContext, request: Any) -> Any:
    logs = topiclog.of(ctx.broker)
    describable = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                 (t.topic for t in request.topics))
    topics = []
    for wanted in request.topics:
        name = wanted.topic
        topic = ctx.broker.image.topic(name)
        partitions = []
        for p in wanted.partitions:
            index = p.partition
            plog = logs.readable(name, index) if topic is not None else None
            if name not in describable:
                partitions.append(_answer(ctx, index, ErrorCode.topic_authorization_failed))
                continue
            if plog is None:
                partitions.append(_answer(ctx, index, ErrorCode.unknown_topic_or_partition
                                          if topic is None else logs.unreadable(name, index)))
                continue
            current = getattr(p, "current_leader_epoch", -1)
            refused = leadership.refusal(ctx, name, index, current)
            if refused is not None:
                partitions.append(_answer(ctx, index, refused))
                continue
            epoch, end = leadership.state(ctx, name, index).end_offset_for(
                p.leader_epoch, plog.log_end_offset)
            partitions.append(_answer(ctx, index, ErrorCode.none, epoch, end))
        topics.append(ctx.nested("OffsetForLeaderTopicResult", topic=name,
                                 partitions=tuple(partitions)))
    return ctx.respond(topics=tuple(topics))
