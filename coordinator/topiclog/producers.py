"""Idempotent producers: producer ids, and each partition's last sequences per producer.

``ProducerState`` follows Kafka's ``ProducerStateManager``/``ProducerAppendInfo``: a batch of an
older epoch is fenced (INVALID_PRODUCER_EPOCH); a new epoch must start at sequence 0; within an
epoch each batch must follow the last one (OUT_OF_ORDER_SEQUENCE_NUMBER); a retried batch that
matches one of the last five is a duplicate, acknowledged with its original offsets. A producer
the partition has no state for (its records deleted, or never seen) may start anywhere.
The state is rebuilt from the batch headers when a log is opened.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from protocol import ErrorCode

from .batch import BatchError, BatchHeader

NO_PRODUCER_EPOCH = -1
CACHED_BATCHES = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerState:
    """The producers of one partition."""

    def __init__(self) -> None:
        self._entries: dict[int, ProducerEntry] = {}

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        entry = self._entries.get(header.producer_id)
        if entry is None or entry.epoch != header.producer_epoch:
            return None
        for cached in entry.batches:
            if (cached.first_seq == header.base_sequence
                    and cached.last_seq == header.last_sequence):
                return cached
        return None

    def check(self, header: BatchHeader) -> None:
        """Raise ``BatchError`` if the batch may not be appended after what this producer sent."""
        entry = self._entries.get(header.producer_id)
        if entry is None or entry.epoch == NO_PRODUCER_EPOCH:
            return
        if header.producer_epoch < entry.epoch:
            raise BatchError(ErrorCode.invalid_producer_epoch,
                             f"Epoch of producer {header.producer_id} at offset is "
                             f"{header.producer_epoch}, which is smaller than the last seen epoch "
                             f"{entry.epoch}")
        if header.producer_epoch != entry.epoch:
            if header.base_sequence != 0:
                raise BatchError(ErrorCode.out_of_order_sequence_number,
                                 f"Invalid sequence number for new epoch of producer "
                                 f"{header.producer_id}: {header.producer_epoch} (request epoch), "
                                 f"{header.base_sequence} (seq. number), {entry.epoch} "
                                 "(current producer epoch)")
            return
        if entry.batches and not _in_sequence(entry.last_seq, header.base_sequence):
            raise BatchError(ErrorCode.out_of_order_sequence_number,
                             f"Out of order sequence number for producer {header.producer_id}: "
                             f"{header.base_sequence} (incoming seq. number), {entry.last_seq} "
                             "(current end sequence number)")

    def check_marker(self, producer_id: int, producer_epoch: int) -> None:
        """Raise ``BatchError`` if a transaction marker's epoch is older than the producer's."""
        entry = self._entries.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            raise BatchError(ErrorCode.invalid_producer_epoch,
                             f"Epoch of producer {producer_id} in the marker is {producer_epoch}, "
                             f"smaller than the last seen epoch {entry.epoch}")

    def update(self, header: BatchHeader, first_offset: int) -> None:
        """Record an appended batch (``header`` as appended, or as found when recovering)."""
        if not header.has_producer_id:
            return
        entry = self._entries.setdefault(header.producer_id, ProducerEntry())
        if header.producer_epoch != entry.epoch:
            entry.epoch = header.producer_epoch
            entry.batches.clear()
        if header.is_control:
            return  # a transaction marker moves the epoch, not the sequence
        entry.batches.append(BatchMetadata(
            header.base_sequence, header.last_sequence, first_offset,
            first_offset + header.last_offset_delta, header.max_timestamp))

    def active(self) -> list[tuple[int, int, int, int]]:
        """(producer id, epoch, last sequence, last batch's timestamp) of each producer with a
        batch in the log (DescribeProducers)."""
        return [(pid, entry.epoch, entry.last_seq,
                 entry.batches[-1].timestamp if entry.batches else -1)
                for pid, entry in self._entries.items()]

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> the last offset of its last batch in the log (what the log cleaner
        keeps, emptied if need be, so the producer's sequence state survives)."""
        return {pid: entry.batches[-1].last_offset
                for pid, entry in self._entries.items() if entry.batches}

    def __len__(self) -> int:
        return len(self._entries)


class ProducerIdManager:
    """Hands out producer ids, in blocks whose end is persisted before any id of the block is
    used (like Kafka's controller), so no id is given twice across restarts."""

    BLOCK_SIZE = 1000
    FILE_NAME = "topiclog-producer-ids"

    def __init__(self, log_dir: Path) -> None:
        self._path = log_dir / self.FILE_NAME
        try:
            self._next = int(self._path.read_text().strip())
        except (OSError, ValueError):
            self._next = 0
        self._block_end = self._next

    def next_id(self) -> int:
        if self._next >= self._block_end:
            self._persist(self._next + self.BLOCK_SIZE)
            self._block_end = self._next + self.BLOCK_SIZE
        producer_id = self._next
        self._next += 1
        return producer_id

    def _persist(self, block_end: int) -> None:
        temp = self._path.with_suffix(".tmp")
        with open(temp, "w") as out:
            out.write(f"{block_end}\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, self._path)
