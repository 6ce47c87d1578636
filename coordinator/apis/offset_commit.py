"""OffsetCommit v2-v10 (and v0-1, served as v2 by ``protocol/legacy.py``: v0 has no generation,
v1 carries each partition's commit timestamp): written as OffsetCommit records through the
group's partition.

v10 (KIP-848 follow-up) names topics by id: they are resolved through the metadata image, and
an unknown id gets UNKNOWN_TOPIC_ID; the records still key offsets by topic name."""

from __future__ import annotations

import datetime
from typing import Any

from coordinator.groups.commit_validation import validate_commit
from coordinator.groups.common import offsets
from coordinator.observability import sensors
from coordinator.runtime import CoordinatorError, Result
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode
from protocol.encoded import EncodedBody, encode_body

from .context import RequestContext, answer_later

_ONE_MS = datetime.timedelta(milliseconds=1)


def _ms(value: Any) -> int:
    return int(value / _ONE_MS) if isinstance(value, datetime.timedelta) else int(value)


def _ref(topic: Any) -> Any:
    """How the request names a topic: its id from v10, its name before."""
    return topic.topic_id if hasattr(topic, "topic_id") else topic.name


def handle(ctx: RequestContext, request: Any) -> Any:
    """The response, or a future of it once the commit's records are durable (a future, not a
    coroutine: the commit path is the hottest write, and a task per request costs)."""
    broker = ctx.broker
    errors: dict[tuple[Any, int], ErrorCode] = {}
    accepted: list[offsets.PartitionCommit] = []
    refs: dict[str, Any] = {}
    """Topic name -> how the request named it (the errors are keyed by the latter)."""
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _respond(ctx, request, {(_ref(t), p.partition_index):
                                       ErrorCode.group_authorization_failed
                                       for t in request.topics for p in t.partitions})
    stamps = ctx.legacy["commit_timestamps"] if ctx.legacy is not None else None
    """OffsetCommit v1's commit timestamps (``protocol/legacy.py``)."""
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC,
                              (_name(broker, t) for t in request.topics))
    for topic in request.topics:
        ref = _ref(topic)
        by_id = hasattr(topic, "topic_id")
        image = broker.image.topic_by_id(ref) if by_id else broker.image.topic(ref)
        missing = ErrorCode.unknown_topic_id if by_id and image is None \
            else ErrorCode.unknown_topic_or_partition
        # Kafka's order: an unknown id, then TOPIC READ, then an unknown name or partition
        denied = not (by_id and image is None) and _name(broker, topic) not in readable
        for p in topic.partitions:
            if denied:
                errors[(ref, p.partition_index)] = ErrorCode.topic_authorization_failed
                continue
            if image is None or not 0 <= p.partition_index < image.partitions:
                errors[(ref, p.partition_index)] = missing
                continue
            refs[image.name] = ref
            accepted.append(offsets.PartitionCommit(
                image.name, p.partition_index, p.committed_offset,
                getattr(p, "committed_leader_epoch", offsets.NO_LEADER_EPOCH),
                p.committed_metadata,
                -1 if stamps is None else stamps.get((image.name, p.partition_index), -1)))
    if not request.group_id:
        errors.update({(refs[c.topic], c.partition): ErrorCode.invalid_group_id
                       for c in accepted})
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

        def committed(outcome: dict[tuple[str, int], ErrorCode]) -> Any:
            errors.update({(refs[topic], partition): error
                           for (topic, partition), error in outcome.items()})
            sensors.record_offset_commits(sum(e is ErrorCode.none for e in outcome.values()))
            return _respond(ctx, request, errors)

        def failed(exc: CoordinatorError) -> Any:
            errors.update({(refs[c.topic], c.partition): exc.code for c in accepted})
            return _respond(ctx, request, errors)

        try:
            written = runtime.submit(runtime.partition_for(request.group_id), True, handler,
                                     name="OffsetCommit", group_id=request.group_id)
        except CoordinatorError as exc:
            return failed(exc)
        return answer_later(written, committed, failed)
    return _respond(ctx, request, errors)


def _name(broker: Any, topic: Any) -> str | None:
    """The topic's name (v10 names it by id: the name of the topic with that id)."""
    if not hasattr(topic, "topic_id"):
        return str(topic.name)
    image = broker.image.topic_by_id(topic.topic_id)
    return None if image is None else str(image.name)


_ENCODED: dict[tuple[Any, ...], EncodedBody] = {}
"""Response bodies by (version, topics, partitions and their errors): a consumer commits the
same partitions again and again, and its answer is the same bytes each time."""
ENCODED_MAX = 4096


def _respond(ctx: RequestContext, request: Any, errors: dict[tuple[Any, int], ErrorCode]
             ) -> Any:
    key = (ctx.schema, *((ref, *((p.partition_index, errors[(ref, p.partition_index)])
                                  for p in topic.partitions))
                         for topic in request.topics for ref in (_ref(topic),)))
    body = _ENCODED.get(key)
    if body is None:
        if len(_ENCODED) >= ENCODED_MAX:
            _ENCODED.clear()
        body = _ENCODED[key] = encode_body(ctx.schema, _response(ctx, request, errors))
    return body


def _response(ctx: RequestContext, request: Any, errors: dict[tuple[Any, int], ErrorCode]
              ) -> Any:
    return ctx.respond(topics=tuple(
        ctx.nested("OffsetCommitResponseTopic", name=getattr(topic, "name", None),
                   topic_id=getattr(topic, "topic_id", None), partitions=tuple(
            ctx.nested("OffsetCommitResponsePartition", partition_index=p.partition_index,
                       error_code=errors[(_ref(topic), p.partition_index)])
            for p in topic.partitions))
        for topic in request.topics))
