"""The transaction coordinator's pure handlers, as Kafka's ``TransactionCoordinator`` (TV1):
each returns ``handler(shard, now_ms) -> Result`` for the transactional id's partition.

A transaction moves Empty -> Ongoing (AddPartitionsToTxn / AddOffsetsToTxn) -> PrepareCommit or
PrepareAbort (EndTxn, a timeout, a fencing InitProducerId) -> CompleteCommit or CompleteAbort
(``complete``, once the markers are written) and back to Ongoing with the next
AddPartitionsToTxn. What is in a Prepare state is handed to whoever writes the markers
(``EndOutcome.to_complete``, ``InitOutcome.to_complete`` and ``scan``'s response).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from coordinator.runtime import Result, partition_for
from protocol import ErrorCode
from storage.records import TransactionLogKey

from .state import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionMetadata,
    TransactionState,
)

OFFSETS_TOPIC = "__consumer_offsets"
COMPLETED = {True: TransactionState.COMPLETE_COMMIT, False: TransactionState.COMPLETE_ABORT}
PREPARED = {True: TransactionState.PREPARE_COMMIT, False: TransactionState.PREPARE_ABORT}


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms


@dataclass(frozen=True, slots=True)
class InitOutcome:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    to_complete: TransactionMetadata | None = None
    """A transaction to finish (its markers) before InitProducerId is tried again."""


@dataclass(frozen=True, slots=True)
class AddOutcome:
    error: ErrorCode
    started: bool = False  # the transaction went from not Ongoing to Ongoing


@dataclass(frozen=True, slots=True)
class EndOutcome:
    error: ErrorCode
    to_complete: TransactionMetadata | None = None


def offsets_partition(group_id: str, num_partitions: int) -> TopicPartition:
    """The partition AddOffsetsToTxn adds: the group's ``__consumer_offsets`` partition."""
    return OFFSETS_TOPIC, partition_for(group_id, num_partitions)


def _bumped(meta: TransactionMetadata, new_producer_id: int) -> tuple[int, int]:
    """The producer id and epoch after a bump: a new id at epoch 0 once epochs run out."""
    if meta.producer_epoch + 1 >= MAX_PRODUCER_EPOCH:
        return new_producer_id, 0
    return meta.producer_id, meta.producer_epoch + 1


def init_producer_id(transactional_id: str, timeout_ms: int, producer_id: int,
                     producer_epoch: int, new_producer_id: int,
                     config: TransactionConfig) -> Any:
    """InitProducerId with a transactional id (``producer_id``/``producer_epoch`` are the
    request's, -1 unless the producer is recovering, KIP-360). ``new_producer_id`` is used when
    the id is new or its epochs are exhausted."""

    def handler(shard: Any, now: int) -> Result:
        if not 0 < timeout_ms <= config.max_timeout_ms:
            return Result((), InitOutcome(ErrorCode.invalid_transaction_timeout))
        meta: TransactionMetadata | None = shard.transactions.get(transactional_id)
        if meta is None or meta.state is TransactionState.DEAD:
            fresh = TransactionMetadata(transactional_id, new_producer_id, 0, timeout_ms,
                                        TransactionState.EMPTY, frozenset(), -1, now)
            return Result([fresh.record()], InitOutcome(ErrorCode.none, new_producer_id, 0))
        if producer_id != NO_PRODUCER_ID and (producer_id, producer_epoch) != (
                meta.producer_id, meta.producer_epoch):
            return Result((), InitOutcome(ErrorCode.producer_fenced))
        if meta.state.is_prepare:
            return Result((), InitOutcome(ErrorCode.concurrent_transactions, to_complete=meta))
        if meta.state is TransactionState.ONGOING:
            # fence the producer of the ongoing transaction: abort it with a bumped epoch
            pid, epoch = _bumped(meta, new_producer_id)
            fenced = meta.to(producer_id=pid, producer_epoch=epoch,
                             state=TransactionState.PREPARE_ABORT, last_update_ms=now,
                             previous_producer_id=meta.producer_id)
            return Result([fenced.record()],
                          InitOutcome(ErrorCode.concurrent_transactions, to_complete=fenced))
        pid, epoch = _bumped(meta, new_producer_id)
        ready = meta.to(producer_id=pid, producer_epoch=epoch, timeout_ms=timeout_ms,
                        state=TransactionState.EMPTY, partitions=frozenset(), start_ms=-1,
                        last_update_ms=now, previous_producer_id=meta.producer_id)
        return Result([ready.record()], InitOutcome(ErrorCode.none, pid, epoch))

    return handler


def _check_producer(meta: TransactionMetadata | None, producer_id: int,
                    producer_epoch: int) -> ErrorCode | None:
    if meta is None or meta.producer_id != producer_id:
        return ErrorCode.invalid_producer_id_mapping
    if meta.producer_epoch != producer_epoch:
        return ErrorCode.producer_fenced
    return None


def add_partitions(transactional_id: str, producer_id: int, producer_epoch: int,
                   partitions: Iterable[TopicPartition]) -> Any:
    """AddPartitionsToTxn (and AddOffsetsToTxn, whose partition is the group's)."""
    wanted = frozenset(partitions)

    def handler(shard: Any, now: int) -> Result:
        meta: TransactionMetadata | None = shard.transactions.get(transactional_id)
        error = _check_producer(meta, producer_id, producer_epoch)
        if error is not None or meta is None:
            return Result((), AddOutcome(error or ErrorCode.invalid_producer_id_mapping))
        if meta.state.is_prepare:
            return Result((), AddOutcome(ErrorCode.concurrent_transactions))
        if meta.state is TransactionState.PREPARE_EPOCH_FENCE or \
                meta.state is TransactionState.DEAD:
            return Result((), AddOutcome(ErrorCode.invalid_txn_state))
        if meta.state is TransactionState.ONGOING and wanted <= meta.partitions:
            return Result((), AddOutcome(ErrorCode.none))
        started = meta.state is not TransactionState.ONGOING
        ongoing = meta.to(state=TransactionState.ONGOING,
                          partitions=(meta.partitions if not started else frozenset()) | wanted,
                          start_ms=now if started else meta.start_ms, last_update_ms=now)
        return Result([ongoing.record()], AddOutcome(ErrorCode.none, started))

    return handler


def add_offsets(transactional_id: str, producer_id: int, producer_epoch: int, group_id: str,
                num_partitions: int) -> Any:
    return add_partitions(transactional_id, producer_id, producer_epoch,
                          [offsets_partition(group_id, num_partitions)])


def end_txn(transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> Any:
    """EndTxn: Ongoing -> PrepareCommit/PrepareAbort; a retry of a finished EndTxn succeeds."""

    def handler(shard: Any, now: int) -> Result:
        meta: TransactionMetadata | None = shard.transactions.get(transactional_id)
        error = _check_producer(meta, producer_id, producer_epoch)
        if error is not None or meta is None:
            return Result((), EndOutcome(error or ErrorCode.invalid_producer_id_mapping))
        state = meta.state
        if state is TransactionState.ONGOING:
            prepared = meta.to(state=PREPARED[commit], last_update_ms=now)
            return Result([prepared.record()], EndOutcome(ErrorCode.none, prepared))
        if state is PREPARED[commit]:
            return Result((), EndOutcome(ErrorCode.concurrent_transactions, meta))
        if state is COMPLETED[commit]:
            return Result((), EndOutcome(ErrorCode.none))
        return Result((), EndOutcome(ErrorCode.invalid_txn_state))

    return handler


def complete(transactional_id: str, producer_id: int, producer_epoch: int) -> Any:
    """Once every marker of a prepared transaction is written: CompleteCommit/CompleteAbort.
    A transaction no longer in that Prepare state (completed already) is left alone."""

    def handler(shard: Any, now: int) -> Result:
        meta: TransactionMetadata | None = shard.transactions.get(transactional_id)
        if meta is None or not meta.state.is_prepare or (meta.producer_id, meta.producer_epoch) \
                != (producer_id, producer_epoch):
            return Result((), False)
        done = meta.to(state=COMPLETED[meta.state is TransactionState.PREPARE_COMMIT],
                       partitions=frozenset(), last_update_ms=now)
        return Result([done.record()], True)

    return handler


def scan(config: TransactionConfig) -> Any:
    """The periodic pass: an Ongoing transaction past its timeout is aborted with a bumped
    epoch (fencing its producer), an idle transactional id past
    ``transactional.id.expiration.ms`` is removed (a tombstone). Answers every transaction in a
    Prepare state, for its markers (those it aborted, and those a restart left in doubt). An
    exhausted epoch is not bumped (as Kafka)."""

    def handler(shard: Any, now: int) -> Result:
        records: list[Any] = []
        prepared: list[TransactionMetadata] = []
        for meta in shard.transactions:
            if meta.state is TransactionState.ONGOING and now > meta.start_ms + meta.timeout_ms:
                epoch = meta.producer_epoch + (meta.producer_epoch + 1 < MAX_PRODUCER_EPOCH)
                meta = meta.to(producer_epoch=epoch,
                               state=TransactionState.PREPARE_ABORT, last_update_ms=now)
                records.append(meta.record())
            elif (meta.state is TransactionState.EMPTY or meta.state.is_complete) and \
                    now >= meta.last_update_ms + config.id_expiration_ms:
                records.append((TransactionLogKey(transactional_id=meta.transactional_id), None))
                continue
            if meta.state.is_prepare:
                prepared.append(meta)
        return Result(records, prepared)

    return handler


def describe(transactional_id: str) -> Any:
    def handler(shard: Any, now: int) -> TransactionMetadata | None:
        meta: TransactionMetadata | None = shard.transactions.get(transactional_id)
        return meta

    return handler


def list_transactions(states: frozenset[str], producer_ids: frozenset[int],
                      duration_ms: int) -> Any:
    """ListTransactions' filters: state names, producer ids, and (v1) running at least
    ``duration_ms`` (-1: any)."""

    def handler(shard: Any, now: int) -> list[TransactionMetadata]:
        out = []
        for meta in shard.transactions:
            if states and meta.state.kafka_name not in states:
                continue
            if producer_ids and meta.producer_id not in producer_ids:
                continue
            if duration_ms >= 0 and now - meta.start_ms < duration_ms:
                continue
            out.append(meta)
        return out

    return handler
