"""OffsetFetch v1-v10 (one group up to v7, batched groups from v8, topic ids from v10).

v10 names topics by id: requested ids are resolved through the metadata image (an unknown one
gets UNKNOWN_TOPIC_ID on each partition); when all offsets are fetched, topics that no longer
exist (no id) are left out."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from coordinator.groups.common import offsets
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

_TOPIC = ("OffsetFetchResponseTopics", "OffsetFetchResponseTopic")
_PARTITION = ("OffsetFetchResponsePartitions", "OffsetFetchResponsePartition")


def _fetch(shard: Any, group_id: str, wanted: Any, member_id: str | None,
           member_epoch: int, require_stable: bool = False) -> Any:
    """(committed offsets, the partitions with a pending transactional offset when
    ``require_stable``: UNSTABLE_OFFSET_COMMIT for them, as Kafka)."""
    # v9: a member of a consumer group reads at its epoch (STALE_MEMBER_EPOCH otherwise).
    validator = getattr(shard.groups.get(group_id), "validate_offset_fetch", None)
    error = validator(member_id, member_epoch) if validator is not None else None
    if error is not None:
        raise CoordinatorError(error)
    found = offsets.fetch(shard.offsets, group_id, wanted)
    unstable: set[tuple[str, int]] = set()
    if require_stable and shard.offsets.has_pending(group_id):
        candidates = found if wanted is None else wanted
        unstable = {tp for tp in candidates if shard.offsets.has_pending(group_id, *tp)}
    return found, unstable


@dataclass(frozen=True, slots=True)
class _Wanted:
    """A requested topic: its name (None for an unknown id) and its id (v10)."""

    name: str | None
    topic_id: uuid.UUID | None
    partition_indexes: Any


def _wanted(ctx: RequestContext, topics: Any) -> list[_Wanted] | None:
    if topics is None:
        return None
    out = []
    for t in topics:
        if hasattr(t, "topic_id"):
            image = ctx.broker.image.topic_by_id(t.topic_id)
            out.append(_Wanted(image.name if image else None, t.topic_id, t.partition_indexes))
        else:
            out.append(_Wanted(t.name, None, t.partition_indexes))
    return out


async def _fetch_group(ctx: RequestContext, group_id: str, requested: Any,
                       member_id: str | None = None, member_epoch: int = -1,
                       require_stable: bool = False) -> tuple[ErrorCode, list[Any]]:
    """(group error, response topics) for one group; ``requested`` None means all.

    As Kafka: GROUP DESCRIBE, else GROUP_AUTHORIZATION_FAILED; a requested topic the principal
    may not DESCRIBE gets TOPIC_AUTHORIZATION_FAILED, and is left out of "all offsets"."""
    topics = _wanted(ctx, requested)
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        error = ErrorCode.group_authorization_failed
        return error, [_topic(ctx, t.name, [(p, None, error) for p in t.partition_indexes],
                              t.topic_id)
                       for t in topics or ()]
    visible = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                             (t.name for t in topics or ()))
    denied = [t for t in topics or () if t.name is not None and t.name not in visible]
    if denied:
        assert topics is not None
        topics = [t for t in topics if t.name is None or t.name in visible]
    wanted = None if topics is None else [
        (t.name, p) for t in topics if t.name is not None for p in t.partition_indexes]
    if not group_id and ctx.version >= 8:
        return ErrorCode.invalid_group_id, []
    runtime = ctx.broker.runtime
    try:
        found, unstable = await runtime.read(
            runtime.partition_for(group_id),
            lambda shard, now: _fetch(shard, group_id, wanted, member_id, member_epoch,
                                      require_stable),
            name="OffsetFetch", group_id=group_id)
    except CoordinatorError as exc:
        return exc.code, [_topic(ctx, t.name, [(p, None, exc.code) for p in t.partition_indexes],
                                 t.topic_id)
                          for t in [*(topics or ()), *denied]]
    if topics is None:
        by_topic: dict[str, list[tuple[int, offsets.CommittedOffset | None, ErrorCode]]] = {}
        for (topic, partition), committed in sorted(found.items()):
            by_topic.setdefault(topic, []).append(
                (partition, None, ErrorCode.unstable_offset_commit)
                if (topic, partition) in unstable else (partition, committed, ErrorCode.none))
        if ctx.broker.authorizer is not None:
            shown = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, by_topic,
                                   log_denied=False)
            by_topic = {name: parts for name, parts in by_topic.items() if name in shown}
        if ctx.version < 10:
            return ErrorCode.none, [_topic(ctx, name, parts) for name, parts in by_topic.items()]
        ids = {name: ctx.broker.image.topic(name) for name in by_topic}
        return ErrorCode.none, [_topic(ctx, name, parts, image.topic_id)
                                for name, parts in by_topic.items()
                                if (image := ids[name]) is not None]
    denied_error = ErrorCode.topic_authorization_failed
    return ErrorCode.none, [
        _topic(ctx, t.name, [(p, None, ErrorCode.unstable_offset_commit)
                             if (t.name, p) in unstable
                             else (p, found.get((t.name, p)), ErrorCode.none)
                             if t.name is not None else (p, None, ErrorCode.unknown_topic_id)
                             for p in t.partition_indexes], t.topic_id)
        for t in topics] + [
        _topic(ctx, t.name, [(p, None, denied_error) for p in t.partition_indexes], t.topic_id)
        for t in denied]


def _topic(ctx: RequestContext, name: str | None,
           partitions: list[tuple[int, offsets.CommittedOffset | None, ErrorCode]],
           topic_id: uuid.UUID | None = None) -> Any:
    return ctx.nested(_TOPIC, name=name, topic_id=topic_id, partitions=tuple(
        ctx.nested(_PARTITION, partition_index=index,
                   committed_offset=committed.offset if committed else offsets.NO_OFFSET,
                   committed_leader_epoch=committed.leader_epoch if committed
                   else offsets.NO_LEADER_EPOCH,
                   metadata=committed.metadata if committed else "", error_code=error)
        for index, committed, error in partitions))


async def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.version >= 8:
        groups = []
        for group in request.groups:
            error, topics = await _fetch_group(ctx, group.group_id, group.topics,
                                               getattr(group, "member_id", None),
                                               getattr(group, "member_epoch", -1),
                                               request.require_stable)
            groups.append(ctx.nested("OffsetFetchResponseGroup", group_id=group.group_id,
                                     topics=tuple(topics), error_code=error))
        return ctx.respond(groups=tuple(groups))
    error, topics = await _fetch_group(ctx, request.group_id, request.topics,
                                       require_stable=getattr(request, "require_stable", False))
    return ctx.respond(topics=tuple(topics), error_code=error)
