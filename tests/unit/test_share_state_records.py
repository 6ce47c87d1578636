"""ShareSnapshot/ShareUpdate records from share-partition state and their replay
(``coordinator.groups.share.state_records``), through the real record codec, a real log and
its compaction: a reload gives the state, and the snapshot rule's counter, the live partition
had."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from coordinator.groups.common.configs import classic_config, offsets_retention
from coordinator.groups.common.shard import CoordinatorShard
from coordinator.groups.share import state_records
from coordinator.groups.share.partition import (
    ACCEPT,
    ACKNOWLEDGED,
    AVAILABLE,
    RELEASE,
    AcquiredRange,
    Changes,
    SharePartition,
    StateBatch,
)
from storage.compaction import compact
from storage.log import PartitionLog
from storage.records import (
    OffsetCommitKey,
    OffsetCommitValue,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareUpdateKey,
    ShareUpdateValue,
    decode_record,
    encode_record,
)

GROUP = "sg"
TOPIC = uuid.UUID(int=0xABC)
TP = (TOPIC, 0)
LOG = [(b, b + 9) for b in range(0, 100_000, 10)]


def new_shard() -> CoordinatorShard:
    replayers: dict[type, Any] = {ShareSnapshotKey: state_records.replay_snapshot,
                                  ShareUpdateKey: state_records.replay_update}
    return CoordinatorShard(0, replayers=replayers, load_hooks=(),
                            classic_config=classic_config(None),
                            offsets_retention=offsets_retention(None))


class Live:
    """A coordinator partition in miniature: each change is written as a record (through the
    codec) and replayed into the same shard, as the runtime does."""

    def __init__(self, updates_per_snapshot: int = 500) -> None:
        self.shard = new_shard()
        self.log: list[tuple[bytes, bytes | None]] = []
        self.updates_per_snapshot = updates_per_snapshot
        self.now = 0
        self.write(state_records.initial_snapshot(GROUP, TOPIC, 0, 0, 1, self.now))

    @property
    def sp(self) -> SharePartition:
        sp: SharePartition = self.shard.share_partitions[GROUP][TP]
        return sp

    def write(self, record: tuple[Any, Any | None]) -> None:
        raw = encode_record(*record)
        self.log.append(raw)
        self.shard.replay(len(self.log) - 1, *decode_record(*raw))

    def persist(self, changes: Changes) -> None:
        if changes:
            self.write(state_records.state_record(GROUP, TOPIC, 0, self.sp, changes, self.now,
                                                  self.updates_per_snapshot))

    def acquire(self, member: str, n: int) -> tuple[AcquiredRange, ...]:
        acq = self.sp.acquire(member, LOG, n, 500, 2000, self.now, 30_000)
        return () if acq is None else acq.ranges

    def ack(self, member: str, first: int, last: int, ack_type: int) -> None:
        err, changes = self.sp.acknowledge(member, [(first, last, [ack_type])], 5)
        assert int(err) == 0
        self.persist(changes)


def reload(raw: list[tuple[bytes, bytes | None]]) -> SharePartition:
    shard = new_shard()
    for offset, (key, value) in enumerate(raw):
        shard.replay(offset, *decode_record(key, value))
    sp: SharePartition = shard.share_partitions[GROUP][TP]
    return sp


def view(sp: SharePartition) -> tuple[Any, ...]:
    return (sp.start_offset, sp.persisted_batches(), sp.state_epoch, sp.snapshot_epoch,
            sp.updates_since_snapshot)


def test_initial_snapshot_and_tombstone() -> None:
    key, value = state_records.initial_snapshot(GROUP, TOPIC, 3, -1, 7, 1234)
    assert key == ShareSnapshotKey(group_id=GROUP, topic_id=TOPIC, partition=3)
    assert value == ShareSnapshotValue(snapshot_epoch=0, state_epoch=7, leader_epoch=-1,
                                       start_offset=-1, delivery_complete_count=-1,
                                       create_timestamp=1234, write_timestamp=1234)
    _, known = state_records.initial_snapshot(GROUP, TOPIC, 3, 0, 7, 1)
    assert known is not None and known.delivery_complete_count == 0
    assert state_records.tombstone(GROUP, TOPIC, 3) == (key, None)


def test_updates_carry_the_changes_and_every_nth_write_is_a_snapshot() -> None:
    live = Live(updates_per_snapshot=2)
    assert live.acquire("m1", 30) == (AcquiredRange(0, 29, 1),)
    live.ack("m1", 0, 4, ACCEPT)
    live.ack("m1", 10, 14, RELEASE)
    key, value = decode_record(*live.log[-1])
    assert isinstance(key, ShareUpdateKey) and isinstance(value, ShareUpdateValue)
    assert value == ShareUpdateValue(
        snapshot_epoch=0, leader_epoch=0, start_offset=5, delivery_complete_count=0,
        state_batches=(ShareStateBatch(first_offset=10, last_offset=14, delivery_state=AVAILABLE,
                                       delivery_count=1),))
    assert live.sp.updates_since_snapshot == 2
    live.ack("m1", 20, 24, ACCEPT)  # the third write: a snapshot of everything
    key, value = decode_record(*live.log[-1])
    assert isinstance(key, ShareSnapshotKey) and isinstance(value, ShareSnapshotValue)
    assert (value.snapshot_epoch, value.state_epoch, value.start_offset) == (1, 1, 5)
    assert value.delivery_complete_count == 5
    assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in value.state_batches] == [(10, 14, AVAILABLE, 1),
                                              (20, 24, ACKNOWLEDGED, 1)]
    assert (live.sp.snapshot_epoch, live.sp.updates_since_snapshot) == (1, 0)
    # the live partition kept its acquisitions through the replay of its own records
    assert live.sp.acquired_count() == 15
    live.ack("m1", 5, 9, ACCEPT)
    assert isinstance(decode_record(*live.log[-1])[0], ShareUpdateKey)


def test_a_reload_gives_the_live_state_and_counter() -> None:
    live = Live(updates_per_snapshot=3)
    for round_ in range(4):
        live.now += 1_000
        ranges = live.acquire(f"m{round_}", 20)
        first, last = ranges[0].first_offset, ranges[-1].last_offset
        live.ack(f"m{round_}", first, first + 4, ACCEPT)
        live.ack(f"m{round_}", first + 5, first + 9, RELEASE)
        live.persist(live.sp.release_member(f"m{round_}", 2))
        assert last >= first + 9
    reloaded = reload(live.log)
    assert view(reloaded) == view(live.sp)
    assert reloaded.acquired_count() == 0
    assert reloaded.next_fetch_offset() == live.sp.next_fetch_offset()
    # the next write is the same kind of record on both sides
    kinds = {type(state_records.state_record(GROUP, TOPIC, 0, sp, Changes(), 0, 3)[0])
             for sp in (reloaded, live.sp)}
    assert len(kinds) == 1


def test_compaction_keeps_what_a_reload_needs(tmp_path: Path) -> None:
    live = Live(updates_per_snapshot=4)
    for _ in range(6):
        live.acquire("m", 10)
        start = live.sp.start_offset
        live.ack("m", start, start + 2, ACCEPT)
        live.persist(live.sp.release_member("m", 5))
    plog = PartitionLog.open(tmp_path, 0, segment_bytes=300)
    for raw in live.log:
        plog.append_batch([raw], 1)
    for i in range(20):  # push every share record into closed segments
        plog.append_batch([encode_record(OffsetCommitKey(group="g", topic="t", partition=0),
                                         OffsetCommitValue(offset=i, commit_timestamp=i))], 1)
    before = len(list(plog.read()))
    compact(plog, 10_000, 100_000)
    survivors = [(k, v) for _, _, k, v in plog.read()
                 if isinstance(decode_record(k, v)[0], ShareSnapshotKey | ShareUpdateKey)]
    plog.close()
    assert len(survivors) + 1 < before
    assert isinstance(decode_record(*survivors[0])[0], ShareSnapshotKey)  # the latest one
    assert view(reload(survivors)) == view(live.sp)


def test_a_tombstone_removes_the_partition_and_the_empty_group() -> None:
    shard = new_shard()
    for partition in (0, 1):
        shard.replay(partition, *state_records.initial_snapshot(GROUP, TOPIC, partition, 0, 1, 0))
    assert set(shard.share_partitions[GROUP]) == {(TOPIC, 0), (TOPIC, 1)}
    shard.replay(2, *state_records.tombstone(GROUP, TOPIC, 0))
    assert set(shard.share_partitions[GROUP]) == {(TOPIC, 1)}
    shard.replay(3, *state_records.tombstone(GROUP, TOPIC, 1))
    assert GROUP not in shard.share_partitions
    shard.replay(4, *state_records.tombstone(GROUP, TOPIC, 1))  # again: nothing to remove
    # an update with no snapshot before it makes the partition
    shard.replay(5, ShareUpdateKey(group_id=GROUP, topic_id=TOPIC, partition=2),
                 ShareUpdateValue(snapshot_epoch=0, leader_epoch=0, start_offset=10,
                                  state_batches=(ShareStateBatch(first_offset=12, last_offset=12,
                                                                 delivery_state=ACKNOWLEDGED,
                                                                 delivery_count=1),)))
    sp = shard.share_partitions[GROUP][(TOPIC, 2)]
    assert sp.start_offset == 10 and sp.persisted_batches() == (
        StateBatch(12, 12, ACKNOWLEDGED, 1),)
    assert sp.updates_since_snapshot == 1
