"""Offset expiration (KIP-211), run every ``offsets.retention.check.interval.ms``.

- A classic group's offsets never expire while it has members subscribed to their topics.
- When a classic group becomes Empty the clock starts: ``offsets.retention.minutes`` later all
  its offsets expire together, and the group is removed.
- Offsets of a live consumer-protocol group for topics it no longer subscribes to, and offsets of
  groups that only commit (no group at all), expire ``offsets.retention.minutes`` after their
  commit. The ``retention_time`` of old OffsetCommit versions is ignored, as KIP-211 says.
Expirations are tombstone records.
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.classic.model import ClassicGroup, ClassicGroupState
from coordinator.groups.common.configs import OffsetsRetention
from coordinator.groups.common.shard import CoordinatorShard
from coordinator.observability import sensors
from coordinator.observability.logs import get_logger
from coordinator.runtime import Result
from storage.records import OffsetCommitKey

from .admin import _subscribed

log = get_logger("coordinator.groups.expiration")

TIMER_KEY = ("offsets-expiration",)


def _expired(shard: Any, group_id: str, now: int, retention_ms: int) -> list[tuple[str, int]]:
    committed = shard.offsets.group(group_id)
    group = shard.groups.get(group_id)
    if isinstance(group, ClassicGroup) and group.state is ClassicGroupState.EMPTY \
            and group.state_timestamp_ms >= 0:
        if now >= group.state_timestamp_ms + retention_ms:
            return [tp for tp in committed if not shard.offsets.has_pending(group_id, *tp)]
        return []
    if isinstance(group, ClassicGroup) and group.state is not ClassicGroupState.EMPTY \
            and group.protocol_type != "consumer":
        return []  # only consumer-protocol groups tell us what they subscribe to
    subscribed = _subscribed(group) if group is not None else frozenset()
    if subscribed is None:
        return []  # a live group whose subscriptions cannot be read keeps its offsets
    # as Kafka's cleanupExpiredOffsets: a partition with a pending transactional offset stays
    return [tp for tp, offset in committed.items()
            if tp[0] not in subscribed and now >= offset.commit_timestamp + retention_ms
            and not shard.offsets.has_pending(group_id, *tp)]


def expire_offsets(shard: Any, now: int) -> Result:
    """Tombstones for every expired offset; Empty classic groups left with none are removed."""
    retention: OffsetsRetention = shard.offsets_retention
    records: list[Any] = []
    removed: list[str] = []
    expired_count = 0
    for group_id in list(shard.offsets.groups()):
        expired = _expired(shard, group_id, now, retention.retention_ms)
        if not expired:
            continue
        records.extend((OffsetCommitKey(group=group_id, topic=t, partition=p), None)
                       for t, p in expired)
        expired_count += len(expired)
        log.info("offsets expired", group_id=group_id, partitions=len(expired),
                 topics=sorted({t for t, _ in expired}))
        group = shard.groups.get(group_id)
        all_gone = len(expired) == len(shard.offsets.group(group_id))
        if isinstance(group, ClassicGroup) and group.state is ClassicGroupState.EMPTY \
                and all_gone:
            records.append(group.tombstone())
            removed.append(group_id)
            log.info("group removed: empty and its offsets expired", group_id=group_id)

    for group_id, group in list(shard.groups.items()):
        if isinstance(group, ClassicGroup) and group.state is ClassicGroupState.EMPTY \
                and not group.pending_members and not shard.offsets.has_offsets(group_id):
            # Kafka's cleanupGroupMetadata: an Empty group with no offsets left is removed.
            records.append(group.tombstone())
            removed.append(group_id)
            log.info("group removed: empty with no offsets", group_id=group_id)

    def effect() -> None:
        for group_id in removed:
            shard.groups.pop(group_id, None)
        sensors.record_offsets_expired(expired_count)
        arm(shard, now)

    return Result(tuple(records), len(records), (), effect)


def arm(shard: CoordinatorShard, now: int) -> None:
    retention: OffsetsRetention = shard.offsets_retention
    shard.timers.schedule(TIMER_KEY, now + retention.check_interval_ms, expire_offsets)

