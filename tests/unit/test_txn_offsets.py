"""The group coordinator's transactional offsets, in virtual time: pending apart from the
committed ones, committed by the commit marker, dropped by the abort marker, and kept out of
offset expiration; deleting the group drops them."""

from __future__ import annotations

from coordinator.groups import admin, expiration, txn_offsets
from coordinator.groups.common.offsets import PartitionCommit
from coordinator.testing.shard_context import ShardContext
from protocol import ErrorCode
from storage.records import OffsetCommitKey, TxnOffsetCommitKey


def commit(group: str, producer_id: int, offset: int, partition: int = 0,
           generation: int = -1, member: str = "") -> txn_offsets.TxnOffsetCommit:
    return txn_offsets.TxnOffsetCommit(group, producer_id, 0, generation, member, None,
                                       (PartitionCommit("in", partition, offset, -1, "m"),))


def test_pending_offsets_are_committed_by_the_commit_marker() -> None:
    ctx = ShardContext()
    errors = ctx.run(txn_offsets.txn_offset_commit(commit("g", 7, 42), 4096))
    assert errors == {("in", 0): ErrorCode.none}
    assert ctx.shard.offsets.get("g", "in", 0) is None  # not visible yet
    assert ctx.shard.offsets.has_pending("g", "in", 0)
    assert not ctx.shard.offsets.has_pending("g", "in", 1)
    assert ctx.run(txn_offsets.end_transaction_marker(7, commit=True)) == 1
    committed = ctx.shard.offsets.get("g", "in", 0)
    assert committed is not None and (committed.offset, committed.metadata) == (42, "m")
    assert not ctx.shard.offsets.has_pending("g")
    # the marker's batch: the committed offset and a tombstone for the pending one
    assert [type(r.key) for r in ctx.records(since=1)] == [OffsetCommitKey, TxnOffsetCommitKey]
    assert ctx.last(TxnOffsetCommitKey).tombstone


def test_the_abort_marker_drops_only_its_producers_offsets_and_survives_a_restart() -> None:
    ctx = ShardContext()
    ctx.run(txn_offsets.txn_offset_commit(commit("g", 7, 42), 4096))
    ctx.run(txn_offsets.txn_offset_commit(commit("g", 8, 50, partition=1), 4096))
    restarted = ctx.restarted()
    assert restarted.shard.offsets.has_pending("g", "in", 0)
    assert restarted.run(txn_offsets.end_transaction_marker(7, commit=False)) == 0
    assert restarted.shard.offsets.get("g", "in", 0) is None
    assert not restarted.shard.offsets.has_pending("g", "in", 0)
    assert restarted.shard.offsets.has_pending("g", "in", 1)  # producer 8's, still open


def test_a_consumer_group_member_must_name_its_epoch_and_a_missing_group_no_generation() -> None:
    ctx = ShardContext()
    assert ctx.run(txn_offsets.txn_offset_commit(commit("nogroup", 7, 1, generation=3), 4096)) \
        == {("in", 0): ErrorCode.illegal_generation}
    assert ctx.run(txn_offsets.txn_offset_commit(commit("nogroup", 7, 1), 4096)) == {
        ("in", 0): ErrorCode.none}


def test_pending_offsets_do_not_expire_and_group_deletion_drops_them() -> None:
    ctx = ShardContext({"offsets.retention.minutes": 1})
    ctx.run(txn_offsets.txn_offset_commit(commit("g", 7, 42), 4096))
    ctx.run(txn_offsets.end_transaction_marker(7, commit=True))
    ctx.run(txn_offsets.txn_offset_commit(commit("g", 9, 43), 4096))  # pending again
    ctx.advance(61_000)
    ctx.run(lambda shard, now: expiration.expire_offsets(shard, now))
    assert ctx.shard.offsets.get("g", "in", 0) is not None  # kept: a transaction is open
    ctx.run(lambda shard, now: admin.delete_group(shard, "g"))
    assert ctx.shard.offsets.get("g", "in", 0) is None
    assert not ctx.shard.offsets.has_pending("g")
