"""TxnOffsetCommit v0-v4: a transactional producer's consumer offsets, pending on the group's
partition until the transaction's marker (``coordinator/groups/txn_offsets.py``). As Kafka:
TRANSACTIONAL_ID WRITE, GROUP READ, TOPIC READ per topic."""

from __future__ import annotations

from typing import Any

from coordinator.groups import txn_offsets
from coordinator.groups.common import offsets
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from . import txn_common
from .context import RequestContext


async def handle(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    everything = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    if not txn_common.may_write(ctx, request.transactional_id):
        return _respond(ctx, request, dict.fromkeys(
            everything, ErrorCode.transactional_id_authorization_failed))
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _respond(ctx, request, dict.fromkeys(everything,
                                                    ErrorCode.group_authorization_failed))
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC,
                              (t.name for t in request.topics))
    errors: dict[tuple[str, int], ErrorCode] = {}
    accepted: list[offsets.PartitionCommit] = []
    for topic in request.topics:
        image = broker.image.topic(topic.name)
        for p in topic.partitions:
            if topic.name not in readable:
                errors[(topic.name, p.partition_index)] = ErrorCode.topic_authorization_failed
            elif image is None or not 0 <= p.partition_index < image.partitions:
                errors[(topic.name, p.partition_index)] = ErrorCode.unknown_topic_or_partition
            else:
                accepted.append(offsets.PartitionCommit(
                    topic.name, p.partition_index, p.committed_offset,
                    getattr(p, "committed_leader_epoch", offsets.NO_LEADER_EPOCH),
                    p.committed_metadata))
    if accepted and not request.group_id:
        errors.update({(c.topic, c.partition): ErrorCode.invalid_group_id for c in accepted})
    elif accepted:
        commit = txn_offsets.TxnOffsetCommit(
            request.group_id, request.producer_id, request.producer_epoch,
            getattr(request, "generation_id", -1), getattr(request, "member_id", ""),
            getattr(request, "group_instance_id", None), tuple(accepted))
        runtime = broker.runtime
        try:
            outcome = await runtime.write(
                runtime.partition_for(request.group_id),
                txn_offsets.txn_offset_commit(commit, broker.config["offset.metadata.max.bytes"]),
                name="TxnOffsetCommit", group_id=request.group_id)
            errors.update(outcome)
        except CoordinatorError as exc:
            errors.update({(c.topic, c.partition): exc.code for c in accepted})
    return _respond(ctx, request, errors)


def _respond(ctx: RequestContext, request: Any, errors: dict[tuple[str, int], ErrorCode]
             ) -> Any:
    return ctx.respond(topics=tuple(
        ctx.nested("TxnOffsetCommitResponseTopic", name=t.name, partitions=tuple(
            ctx.nested("TxnOffsetCommitResponsePartition", partition_index=p.partition_index,
                       error_code=errors[(t.name, p.partition_index)])
            for p in t.partitions))
        for t in request.topics))
