"""The internal topics' partitions as Fetch and ListOffsets read them: ``__consumer_offsets-N``,
``__transaction_state-N`` and ``__share_group_state-N`` are the coordinator store's partition N,
each record in Kafka's serialization for its type (``storage/records/kafka_format.py``), at its
own offset.

Only what is durable is read (the high watermark is the partition's durable offset). A fetch
reads from the batch where a previous reader stopped (``storage.log.PartitionLog.read_batches``),
a chunk at a time, not its segment from the start. The store
keeps a pending transactional offset as a record of its own and writes the committed
OffsetCommit records with the marker, so a reader, read_committed or not, sees an offset
commit of a transaction once the transaction commits; an aborted one never. The log is read as
the cleaner left it: compaction keeps the latest record of every key, and snapshots are written
beside the log, never instead of it, so a reader from the log start sees every key's latest
value. Records Kafka does not keep in the topic are left out (offset gaps, as compaction
leaves).
"""

from __future__ import annotations

import struct
from typing import Any

from storage.records.kafka_format import FORMS, kafka_form

NO_TIMESTAMP = -1
_HEADER = struct.Struct(">qiibIhiqqqhii")
"""A v2 batch's header: base offset, length, leader epoch, magic, CRC, attributes, last offset
delta, base and max timestamps, producer id and epoch, base sequence, record count."""
_LAST_OFFSET_DELTA = slice(23, 27)
_CRC = slice(17, 21)
_CRC_FROM = 21


def _empty_batch(timestamp: int) -> bytearray:
    return bytearray(_HEADER.pack(0, _HEADER.size - 12, -1, 2, 0, 0, 0, timestamp, timestamp,
                                  -1, -1, -1, 0))


def _covering(batch: bytearray, base: int, last_delta: int) -> bytes:
    """``batch`` at offset ``base``, its last offset ``base + last_delta`` (CRC recomputed)."""
    from kafka.record.util import calc_crc32c
    batch[0:8] = base.to_bytes(8, "big", signed=True)
    batch[_LAST_OFFSET_DELTA] = last_delta.to_bytes(4, "big", signed=True)
    batch[_CRC] = calc_crc32c(memoryview(batch)[_CRC_FROM:]).to_bytes(4, "big")
    return bytes(batch)


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

    def _scan(self, offset: int) -> Any:
        """(offset, timestamp, Kafka's key and value, or None for a record not of the topic)
        of the durable records from ``offset``."""
        found = self._log()
        if found is None:
            return
        plog, end = found
        batches = plog.read_batches(offset)  # from where the last reader stopped, if it may
        try:
            for _, records in batches:
                for at, timestamp, key, value in records:
                    if at >= end:
                        return
                    yield at, timestamp, kafka_form(self.topic, key, value)
        finally:
            batches.close()  # now: the log remembers where this reader stopped

    def records(self, offset: int) -> Any:
        """(offset, timestamp, key, value) of the topic's durable records from ``offset``, in
        Kafka's serialization."""
        for at, timestamp, form in self._scan(offset):
            if form is not None:
                yield at, timestamp, form[0], form[1]

    def read(self, offset: int, max_bytes: int, min_one: bool,
             max_offset: int | None = None) -> bytes:
        """One v2 record batch of the records from ``offset``, up to ``max_bytes`` (at least one
        record when ``min_one``). Its last offset is that of the last record read, of the
        topic or not, as a compacted batch keeps its last offset: a reader moves past records
        the topic does not show, an empty batch if none it shows."""
        # kafka-python's batch writer, imported on first use (``serve`` does not import it)
        from kafka.record.default_records import DefaultRecordBatchBuilder

        builder: DefaultRecordBatchBuilder | None = None
        shown = 0
        base = last = -1
        last_timestamp = NO_TIMESTAMP
        for at, timestamp, form in self._scan(offset):
            if max_offset is not None and at >= max_offset:
                break
            if base < 0:
                base = at
            if form is not None:
                if builder is None:
                    builder = DefaultRecordBatchBuilder(
                        magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                        producer_epoch=-1, base_sequence=-1, batch_size=max_bytes)
                if builder.append(at - base, timestamp, form[0], form[1], []) is None and shown:
                    break
                shown += 1
            last, last_timestamp = at, timestamp
        if base < 0:
            return b""
        if builder is None or not shown:
            batch = _empty_batch(last_timestamp)
        else:
            batch = bytearray(builder.build())
        if len(batch) > max_bytes and not min_one:
            return b""
        return _covering(batch, base, last - base)

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
