"""ShareSnapshot/ShareUpdate records from share-partition state, and their replay.

Kafka's share coordinator (``ShareCoordinatorShard``) keeps this state in ``__share_group_state``;
here the records go to the group's own coordinator partition and are replayed into
``shard.share_partitions[group_id][(topic_id, partition)]``, one
:class:`~coordinator.groups.share.partition.SharePartition` each.

A write is a ShareUpdate with the changed batches and the current start offset, or, once
``share.coordinator.snapshot.update.records.per.snapshot`` updates have been replayed since the
last snapshot, a full ShareSnapshot with the next snapshot epoch (Kafka's
``generateShareStateRecord``). The counter lives in the partition and only replay changes it
(a snapshot resets it, an update adds one), so the rule gives the same answer after a reload:
compaction keeps the latest snapshot of a key and the updates after it, exactly what the counter
counts. (Kafka resets its counter on a snapshot only once it reached the limit, so an initial
snapshot does not reset it there; the difference only shifts when the next snapshot is written.)
Leader epochs are written (0, or -1 in an initial snapshot) but not tracked on replay: this node
leads every partition.
"""

from __future__ import annotations

import uuid

from coordinator.groups.common.shard import CoordinatorShard
from coordinator.runtime.result import Record
from storage.records import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareUpdateKey,
    ShareUpdateValue,
)

from .partition import Changes, SharePartition, StateBatch

UPDATES_PER_SNAPSHOT = 500
"""Kafka's default ``share.coordinator.snapshot.update.records.per.snapshot``."""
LEADER_EPOCH = 0
"""The leader epoch written with share state: every partition's (this node leads them all)."""


def _to_record(batches: tuple[StateBatch, ...]) -> tuple[ShareStateBatch, ...]:
    return tuple(ShareStateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                 delivery_state=b.state, delivery_count=b.delivery_count)
                 for b in batches)


def _from_record(batches: tuple[ShareStateBatch, ...]) -> list[StateBatch]:
    return [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in batches]


def state_record(group_id: str, topic_id: uuid.UUID, partition: int, sp: SharePartition,
                 changes: Changes, now_ms: int, updates_per_snapshot: int = UPDATES_PER_SNAPSHOT,
                 leader_epoch: int = LEADER_EPOCH) -> Record:
    """The record that persists ``changes`` (just made to ``sp``): a ShareUpdate with the changed
    batches and ``sp``'s start offset, or a full ShareSnapshot (snapshot epoch + 1) when
    ``sp.updates_since_snapshot >= updates_per_snapshot``."""
    if sp.updates_since_snapshot >= updates_per_snapshot:
        return (ShareSnapshotKey(group_id=group_id, topic_id=topic_id, partition=partition),
                ShareSnapshotValue(
                    snapshot_epoch=sp.snapshot_epoch + 1,
                    state_epoch=sp.state_epoch,
                    leader_epoch=leader_epoch,
                    start_offset=sp.start_offset,
                    delivery_complete_count=sp.delivery_complete_count(),
                    create_timestamp=now_ms,
                    write_timestamp=now_ms,
                    state_batches=_to_record(sp.persisted_batches()),
                ))
    return (ShareUpdateKey(group_id=group_id, topic_id=topic_id, partition=partition),
            ShareUpdateValue(
                snapshot_epoch=sp.snapshot_epoch,
                leader_epoch=leader_epoch,
                start_offset=sp.start_offset,
                delivery_complete_count=sp.delivery_complete_count(),
                state_batches=_to_record(changes.batches),
            ))


def initial_snapshot(group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int,
                     state_epoch: int, now_ms: int, snapshot_epoch: int = 0) -> Record:
    """A new share partition's state (Kafka's InitializeShareGroupState): start offset -1 (the
    first fetch applies ``share.auto.offset.reset``) or a given one, no batches, leader epoch
    -1, delivery complete count -1 for start -1 else 0."""
    return (ShareSnapshotKey(group_id=group_id, topic_id=topic_id, partition=partition),
            ShareSnapshotValue(
                snapshot_epoch=snapshot_epoch,
                state_epoch=state_epoch,
                leader_epoch=-1,
                start_offset=start_offset,
                delivery_complete_count=-1 if start_offset == -1 else 0,
                create_timestamp=now_ms,
                write_timestamp=now_ms,
            ))


def tombstone(group_id: str, topic_id: uuid.UUID, partition: int) -> Record:
    """Delete a share partition's state (Kafka's DeleteShareGroupState); compaction then drops
    its ShareUpdates too."""
    return (ShareSnapshotKey(group_id=group_id, topic_id=topic_id, partition=partition), None)


def _partition(shard: CoordinatorShard, key: ShareSnapshotKey | ShareUpdateKey) -> SharePartition:
    by_tp = shard.share_partitions.setdefault(key.group_id, {})
    sp: SharePartition | None = by_tp.get((key.topic_id, key.partition))
    if sp is None:
        sp = by_tp[(key.topic_id, key.partition)] = SharePartition()
    return sp


def replay_snapshot(shard: CoordinatorShard, offset: int, key: ShareSnapshotKey,
                    value: ShareSnapshotValue | None) -> None:
    """A ShareSnapshot replaces the partition's state; its tombstone removes the partition (and
    the group's entry once it has none)."""
    if value is None:
        by_tp = shard.share_partitions.get(key.group_id)
        if by_tp is not None:
            by_tp.pop((key.topic_id, key.partition), None)
            if not by_tp:
                del shard.share_partitions[key.group_id]
        return
    _partition(shard, key).load_snapshot(value.start_offset, value.state_epoch,
                                         value.snapshot_epoch, _from_record(value.state_batches))


def replay_update(shard: CoordinatorShard, offset: int, key: ShareUpdateKey,
                  value: ShareUpdateValue | None) -> None:
    """A ShareUpdate merges into the partition's state (a partition is made if it has none)."""
    if value is None:  # not written; nothing to merge
        return
    _partition(shard, key).load_update(value.start_offset, _from_record(value.state_batches))
