"""OffsetCommit v2-v9: written as OffsetCommit records through the group's partition."""

from __future__ import annotations

import datetime
from typing import Any

from protocol import ErrorCode

from .. import observability, offsets
from ..groups.commit_validation import validate_commit
from ..runtime import CoordinatorError, Result
from .context import RequestContext

_ONE_MS = datetime.timedelta(milliseconds=1)


def _ms(value: Any) -> int:
    return int(value / _ONE_MS) if isinstance(value, datetime.timedelta) else int(value)


async def handle(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    errors: dict[tuple[str, int], ErrorCode] = {}
    accepted: list[offsets.PartitionCommit] = []
    for topic in request.topics:
        image = broker.image.topic(topic.name)
        for p in topic.partitions:
            if image is None or not 0 <= p.partition_index < image.partitions:
                errors[(topic.name, p.partition_index)] = ErrorCode.unknown_topic_or_partition
                continue
            accepted.append(offsets.PartitionCommit(
                topic.name, p.partition_index, p.committed_offset,
                getattr(p, "committed_leader_epoch", offsets.NO_LEADER_EPOCH),
                p.committed_metadata))
    if not request.group_id:
        errors.update({(c.topic, c.partition): ErrorCode.invalid_group_id for c in accepted})
    elif accepted:
        commit = offsets.OffsetCommit(
            request.group_id, request.generation_id_or_member_epoch, request.member_id,
            _ms(getattr(request, "retention_time", -1)), tuple(accepted), ctx.version,
            getattr(request, "group_instance_id", None))
        runtime = broker.runtime
        max_bytes = broker.config["offset.metadata.max.bytes"]

        def handler(shard: Any, now: int) -> Result:
            error = validate_commit(shard, commit)
            if error is not None:
                return Result((), {(c.topic, c.partition): error for c in commit.partitions})
            return offsets.commit(shard.offsets, commit, now, max_bytes,
                                  shard.group_exists(commit.group_id))

        try:
            outcome = await runtime.write(runtime.partition_for(request.group_id), handler,
                                          name="OffsetCommit")
            errors.update(outcome)
            observability.record_offset_commits(sum(e is ErrorCode.none for e in outcome.values()))
        except CoordinatorError as exc:
            errors.update({(c.topic, c.partition): exc.code for c in accepted})
    return ctx.respond(topics=tuple(
        ctx.nested("OffsetCommitResponseTopic", name=topic.name, partitions=tuple(
            ctx.nested("OffsetCommitResponsePartition", partition_index=p.partition_index,
                       error_code=errors[(topic.name, p.partition_index)])
            for p in topic.partitions))
        for topic in request.topics))
