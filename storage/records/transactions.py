"""Transactions: the transaction coordinator's state (Kafka's ``__transaction_state`` record,
TransactionLogKey / TransactionLogValue, type 1010 here) and the group coordinator's pending
transactional offsets (TxnOffsetCommit, type 1011, our own).

Kafka writes TransactionLog records to ``__transaction_state`` with key version 0; this store
has one type-id namespace for every coordinator partition and 0 is OffsetCommit's, so it gets
1010 and lives on the coordinator partition of the transactional id
(``abs(hashCode) % offsets.topic.num.partitions``). The fields are Kafka's
(``transaction-coordinator/.../TransactionLogValue.json``; the tagged ones are plain fields here).
A tombstone is a transactional id expired after ``transactional.id.expiration.ms``.

Kafka keeps a pending transactional offset as an OffsetCommit record in a transactional batch of
``__consumer_offsets``, made visible or dropped by the commit or abort marker that follows. This
store's batches carry no producer, so a pending offset is its own record, keyed by group,
partition and producer id; the marker's handler writes the committed OffsetCommit records and
tombstones for the pending ones in one batch, so compaction keeps nothing stale.
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from storage.codec import INT8, INT16, INT32, INT64, NUUID, STRING, Array, Struct, codec, f, record


@codec(lower_camel=True)
@record
class TransactionLogKey:
    TYPE_ID: ClassVar[int] = 1010
    transactional_id: str = f(STRING)


@codec(lower_camel=True)
@record
class PartitionsSchema:
    topic: str = f(STRING)
    partition_ids: tuple[int, ...] = f(Array(INT32), default=())


@codec(lower_camel=True)
@record
class TransactionLogValue:
    VERSION: ClassVar[int] = 0
    producer_id: int = f(INT64)
    previous_producer_id: int = f(INT64, default=-1)
    next_producer_id: int = f(INT64, default=-1)
    producer_epoch: int = f(INT16)
    transaction_timeout_ms: int = f(INT32)
    transaction_status: int = f(INT8)
    transaction_partitions: tuple[PartitionsSchema, ...] = f(
        Array(Struct(PartitionsSchema)), default=())
    transaction_last_update_timestamp_ms: int = f(INT64)
    transaction_start_timestamp_ms: int = f(INT64, default=-1)
    client_transaction_version: int = f(INT16, default=0)


@codec(lower_camel=True)
@record
class TxnOffsetCommitKey:
    TYPE_ID: ClassVar[int] = 1011
    group: str = f(STRING)
    topic: str = f(STRING)
    partition: int = f(INT32)
    producer_id: int = f(INT64)


@codec(lower_camel=True)
@record
class TxnOffsetCommitValue:
    VERSION: ClassVar[int] = 0
    producer_epoch: int = f(INT16)
    offset: int = f(INT64)
    leader_epoch: int = f(INT32, default=-1)
    metadata: str = f(STRING, default="")
    commit_timestamp: int = f(INT64)
    topic_id: uuid.UUID | None = f(NUUID, default=None)
