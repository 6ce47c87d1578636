"""What the transaction coordinator knows of each transactional id, rebuilt from
TransactionLog records: Kafka's ``TransactionMetadata`` and ``TransactionState``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from storage.records import PartitionsSchema, TransactionLogKey, TransactionLogValue

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 32767  # Short.MAX_VALUE; Kafka bumps to a new producer id before it


class TransactionState(IntEnum):
    """Kafka's states, with the ids ``TransactionStatus`` stores."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and ListTransactions answer with (``CompleteCommit``)."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @property
    def is_prepare(self) -> bool:
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)

    @property
    def is_complete(self) -> bool:
        return self in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)


TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    start_ms: int = -1
    last_update_ms: int = -1
    previous_producer_id: int = NO_PRODUCER_ID

    def to(self, **changes: Any) -> TransactionMetadata:
        return replace(self, **changes)

    def record(self) -> tuple[TransactionLogKey, TransactionLogValue]:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(self.partitions):
            by_topic.setdefault(topic, []).append(partition)
        return (TransactionLogKey(transactional_id=self.transactional_id),
                TransactionLogValue(
                    producer_id=self.producer_id,
                    previous_producer_id=self.previous_producer_id,
                    producer_epoch=self.producer_epoch,
                    transaction_timeout_ms=self.timeout_ms,
                    transaction_status=int(self.state),
                    transaction_partitions=tuple(
                        PartitionsSchema(topic=t, partition_ids=tuple(ps))
                        for t, ps in by_topic.items()),
                    transaction_last_update_timestamp_ms=self.last_update_ms,
                    transaction_start_timestamp_ms=self.start_ms))

    @staticmethod
    def from_record(key: TransactionLogKey, value: TransactionLogValue) -> TransactionMetadata:
        return TransactionMetadata(
            key.transactional_id, value.producer_id, value.producer_epoch,
            value.transaction_timeout_ms, TransactionState(value.transaction_status),
            frozenset((p.topic, i) for p in value.transaction_partitions
                      for i in p.partition_ids),
            value.transaction_start_timestamp_ms, value.transaction_last_update_timestamp_ms,
            value.previous_producer_id)


class TransactionsState:
    """The transactional ids of one coordinator partition."""

    def __init__(self) -> None:
        self._by_id: dict[str, TransactionMetadata] = {}

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        return self._by_id.get(transactional_id)

    def put(self, metadata: TransactionMetadata) -> None:
        self._by_id[metadata.transactional_id] = metadata

    def remove(self, transactional_id: str) -> None:
        self._by_id.pop(transactional_id, None)

    def __iter__(self) -> Iterator[TransactionMetadata]:
        return iter(list(self._by_id.values()))

    def __len__(self) -> int:
        return len(self._by_id)


def replay(shard: Any, offset: int, key: TransactionLogKey,
           value: TransactionLogValue | None) -> None:
    """The replayer of ``TransactionLog`` records: into ``shard.transactions``."""
    if value is None:
        shard.transactions.remove(key.transactional_id)
    else:
        shard.transactions.put(TransactionMetadata.from_record(key, value))
