"""The internal topics' partitions as Fetch and ListOffsets read them: ``__consumer_offsets-N``
and ``__transaction_state-N`` are the coordinator store's partition N, each record in Kafka's
serialization for its type (``storage/records/kafka_format.py``), at its own offset.

Only what is durable is read (the high watermark is the partition's durable offset). The store
keeps a pending transactional offset as a record of its own and writes the committed
OffsetCommit records with the marker, so a reader, read_committed or not, sees an offset
commit of a transaction once the transaction commits; an aborted one never. The log is read as
the cleaner left it: compaction keeps the latest record of every key, and snapshots are written
beside the log, never instead of it, so a reader from the log start sees every key's latest
value. Records Kafka does not keep in the topic are left out (offset gaps, as compaction
leaves).
"""

from __future__ import annotations

from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from storage.records.kafka_format import FORMS, kafka_form

_BASE = slice(0, 8)
NO_TIMESTAMP = -1


class NoTransactions:
    """Internal topics hold no producer's transactions."""

    @staticmethod
    def aborted_between(first: int, last: int) -> tuple[Any, ...]:
        return ()


class InternalPartitionLog:
    """One partition of an internal topic, read from the coordinator runtime's store."""

    transactions = NoTransactions()

    def __init__(self, runtime: Any, topic: str, partition: int) -> None:
        self.runtime = runtime
        self.topic = topic
        self.partition = partition

    def _log(self) -> tuple[Any, int] | None:
        return self.runtime.durable_log(self.partition)

    @property
    def available(self) -> bool:
        """Whether the partition has loaded (until then it has no leader, for clients)."""
        return self._log() is not None

    @property
    def log_start_offset(self) -> int:
        found = self._log()
        if found is None:
            return 0
        return min(found[0].segments()[0].base_offset, found[1])

    @property
    def log_end_offset(self) -> int:
        found = self._log()
        return 0 if found is None else found[1]

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        return self.log_end_offset

    def records(self, offset: int) -> Any:
        """(offset, timestamp, key, value) of the topic's durable records from ``offset``, in
        Kafka's serialization."""
        found = self._log()
        if found is None:
            return
        plog, end = found
        for at, timestamp, key, value in plog.read(offset):
            if at >= end:
                return
            form = kafka_form(self.topic, key, value)
            if form is not None:
                yield at, timestamp, form[0], form[1]

    def read(self, offset: int, max_bytes: int, min_one: bool,
             max_offset: int | None = None) -> bytes:
        """One v2 record batch of the records from ``offset``, up to ``max_bytes`` (at least one
        record when ``min_one``)."""
        builder: DefaultRecordBatchBuilder | None = None
        base = 0
        for at, timestamp, key, value in self.records(offset):
            if max_offset is not None and at >= max_offset:
                break
            if builder is None:
                builder = DefaultRecordBatchBuilder(
                    magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                    producer_epoch=-1, base_sequence=-1, batch_size=max_bytes)
                base = at
                if builder.append(0, timestamp, key, value, []) is None and not min_one:
                    return b""
                continue
            if builder.append(at - base, timestamp, key, value, []) is None:
                break
        if builder is None:
            return b""
        batch = bytearray(builder.build())
        batch[_BASE] = base.to_bytes(8, "big", signed=True)  # not covered by the CRC
        if len(batch) > max_bytes and not min_one:
            return b""
        return bytes(batch)

    def offset_for_timestamp(self, target: int) -> tuple[int, int] | None:
        for at, timestamp, _, _ in self.records(self.log_start_offset):
            if timestamp >= target:
                return timestamp, at
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        best: tuple[int, int] | None = None
        for at, timestamp, _, _ in self.records(self.log_start_offset):
            if best is None or timestamp > best[0]:
                best = (timestamp, at)
        return best


def internal_log(runtime: Any, topic: str, partition: int) -> InternalPartitionLog | None:
    """The partition of an internal topic served from the store; None for other topics, or a
    partition out of range."""
    if topic not in FORMS or runtime is None or not 0 <= partition < runtime.num_partitions:
        return None
    return InternalPartitionLog(runtime, topic, partition)
