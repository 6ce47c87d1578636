"""The transaction coordinator's state machine, in virtual time (``ShardContext``): producer
ids and epochs, fencing, the transaction states, timeouts, id expiration and what a restart
leaves in doubt."""

from __future__ import annotations

from typing import Any

from coordinator import transaction
from coordinator.testing.shard_context import ShardContext
from coordinator.transaction import TransactionConfig, TransactionState
from protocol import ErrorCode
from storage.records import TransactionLogKey

CONFIG = TransactionConfig(max_timeout_ms=60_000, id_expiration_ms=3_600_000)
TXN = "app-1"


def init(ctx: ShardContext, new_id: int = 100, timeout_ms: int = 10_000,
         producer_id: int = -1, producer_epoch: int = -1) -> Any:
    return ctx.run(transaction.init_producer_id(TXN, timeout_ms, producer_id, producer_epoch,
                                                new_id, CONFIG))


def meta(ctx: ShardContext) -> transaction.TransactionMetadata:
    found = ctx.shard.transactions.get(TXN)
    assert found is not None
    return found


def begin(ctx: ShardContext, pid: int, epoch: int, *partitions: tuple[str, int]) -> Any:
    return ctx.run(transaction.add_partitions(TXN, pid, epoch, partitions or [("out", 0)]))


def finish(ctx: ShardContext, outcome: Any) -> None:
    """What the marker writer does once the markers are durable."""
    prepared = outcome.to_complete
    assert ctx.run(transaction.complete(TXN, prepared.producer_id, prepared.producer_epoch))


def test_a_new_transactional_id_gets_a_producer_id_and_each_init_bumps_the_epoch() -> None:
    ctx = ShardContext()
    first = init(ctx)
    assert (first.error, first.producer_id, first.producer_epoch) == (ErrorCode.none, 100, 0)
    second = init(ctx, new_id=101)
    assert (second.producer_id, second.producer_epoch) == (100, 1)
    assert meta(ctx).state is TransactionState.EMPTY
    assert [r.key for r in ctx.records(TransactionLogKey)] == [
        TransactionLogKey(transactional_id=TXN)] * 2


def test_a_transaction_goes_ongoing_prepare_complete_and_a_retried_end_succeeds() -> None:
    ctx = ShardContext()
    init(ctx)
    assert begin(ctx, 100, 0, ("out", 0)).started
    assert begin(ctx, 100, 0, ("out", 1), ("__consumer_offsets", 7)).error is ErrorCode.none
    assert meta(ctx).partitions == {("out", 0), ("out", 1), ("__consumer_offsets", 7)}
    ctx.advance(5)
    ended = ctx.run(transaction.end_txn(TXN, 100, 0, True))
    assert ended.error is ErrorCode.none
    assert ended.to_complete.state is TransactionState.PREPARE_COMMIT
    retried = ctx.run(transaction.end_txn(TXN, 100, 0, True))
    assert retried.error is ErrorCode.concurrent_transactions  # markers still going out
    assert begin(ctx, 100, 0).error is ErrorCode.concurrent_transactions
    finish(ctx, ended)
    assert meta(ctx).state is TransactionState.COMPLETE_COMMIT and not meta(ctx).partitions
    assert ctx.run(transaction.end_txn(TXN, 100, 0, True)).error is ErrorCode.none
    assert ctx.run(transaction.end_txn(TXN, 100, 0, False)).error is ErrorCode.invalid_txn_state
    assert begin(ctx, 100, 0).started  # the next transaction


def test_wrong_producers_are_refused_as_kafka_refuses_them() -> None:
    ctx = ShardContext()
    init(ctx)
    init(ctx)  # epoch 1
    assert begin(ctx, 100, 0).error is ErrorCode.producer_fenced
    assert begin(ctx, 999, 1).error is ErrorCode.invalid_producer_id_mapping
    assert ctx.run(transaction.end_txn("unknown", 100, 1, True)).error is \
        ErrorCode.invalid_producer_id_mapping
    assert init(ctx, timeout_ms=60_001).error is ErrorCode.invalid_transaction_timeout
    # KIP-360: a producer naming an id/epoch that is not the current one is fenced
    assert init(ctx, producer_id=100, producer_epoch=0).error is ErrorCode.producer_fenced


def test_a_new_producer_fences_the_old_one_by_aborting_its_open_transaction() -> None:
    ctx = ShardContext()
    init(ctx)
    begin(ctx, 100, 0)
    fencing = init(ctx)
    assert fencing.error is ErrorCode.concurrent_transactions
    assert fencing.to_complete.state is TransactionState.PREPARE_ABORT
    assert fencing.to_complete.producer_epoch == 1  # the abort markers fence epoch 0
    finish(ctx, fencing)
    retried = init(ctx)
    assert (retried.error, retried.producer_epoch) == (ErrorCode.none, 2)
    assert begin(ctx, 100, 0).error is ErrorCode.producer_fenced  # the zombie


def test_an_exhausted_epoch_moves_to_a_new_producer_id() -> None:
    ctx = ShardContext()
    init(ctx)
    ctx.shard.transactions.put(meta(ctx).to(producer_epoch=32766))
    bumped = init(ctx, new_id=555)
    assert (bumped.producer_id, bumped.producer_epoch) == (555, 0)


def test_a_transaction_past_its_timeout_is_aborted_with_a_bumped_epoch() -> None:
    ctx = ShardContext()
    init(ctx, timeout_ms=10_000)
    begin(ctx, 100, 0)
    assert ctx.run(transaction.scan(CONFIG)) == []
    ctx.advance(10_001)
    [prepared] = ctx.run(transaction.scan(CONFIG))
    assert (prepared.state, prepared.producer_epoch) == (TransactionState.PREPARE_ABORT, 1)
    assert ctx.run(transaction.end_txn(TXN, 100, 0, True)).error is ErrorCode.producer_fenced
    assert ctx.run(transaction.complete(TXN, 100, 1))
    assert meta(ctx).state is TransactionState.COMPLETE_ABORT
    assert ctx.run(transaction.scan(CONFIG)) == []


def test_an_idle_transactional_id_expires() -> None:
    ctx = ShardContext()
    init(ctx)
    ctx.advance(CONFIG.id_expiration_ms - 1)
    ctx.run(transaction.scan(CONFIG))
    assert ctx.shard.transactions.get(TXN) is not None
    ctx.advance(1)
    ctx.run(transaction.scan(CONFIG))
    assert ctx.shard.transactions.get(TXN) is None
    assert ctx.last(TransactionLogKey).tombstone
    assert init(ctx, new_id=200).producer_id == 200  # a new producer id, epoch 0


def test_after_a_restart_a_prepared_transaction_is_completed_and_an_open_one_times_out() -> None:
    ctx = ShardContext()
    init(ctx)
    begin(ctx, 100, 0)
    ctx.run(transaction.end_txn(TXN, 100, 0, True))  # PrepareCommit, then the server dies
    other = "app-2"
    ctx.run(transaction.init_producer_id(other, 5_000, -1, -1, 300, CONFIG))
    ctx.run(transaction.add_partitions(other, 300, 0, [("out", 1)]))

    restarted = ctx.restarted(advance_ms=1_000)
    [in_doubt] = restarted.run(transaction.scan(CONFIG))
    assert (in_doubt.transactional_id, in_doubt.state) == (TXN, TransactionState.PREPARE_COMMIT)
    restarted.advance(4_001)
    prepared = {m.transactional_id: m for m in restarted.run(transaction.scan(CONFIG))}
    assert prepared[other].state is TransactionState.PREPARE_ABORT
    assert prepared[TXN].state is TransactionState.PREPARE_COMMIT  # until its markers are done


def test_describe_and_list_read_the_state() -> None:
    ctx = ShardContext()
    init(ctx)
    begin(ctx, 100, 0)
    assert ctx.read(transaction.describe(TXN)).state is TransactionState.ONGOING
    assert ctx.read(transaction.describe("nope")) is None
    listed = ctx.read(transaction.list_transactions(frozenset({"Ongoing"}), frozenset(), -1))
    assert [m.transactional_id for m in listed] == [TXN]
    assert ctx.read(transaction.list_transactions(frozenset({"Empty"}), frozenset(), -1)) == []
    ctx.advance(100)
    assert ctx.read(transaction.list_transactions(frozenset(), frozenset({100}), 101)) == []
    assert len(ctx.read(transaction.list_transactions(frozenset(), frozenset({100}), 100))) == 1
