"""One topic partition's log: ``<log.dirs>/<topic>-<partition>/``, segments of record batches.

Appends validate the producer's batch and store it with offsets assigned (and the log append
time, if the topic says so); reads return whole stored batches from the one holding the fetch
offset. The high watermark is the log end offset (a single replica); the log start offset is the
first segment's base offset, moved by retention. Opening recovers a torn tail: the log is cut at
the first batch that is truncated or fails its CRC, and later segments are deleted, as Kafka's
log recovery does.

Opening a partition with no segment files creates only its directory and ``partition.metadata``:
the first segment file is created by the first append, and its directory entry is fsynced with
the first fsync of its data. Segment files hold descriptors only while recently used (see
:mod:`.segment`).
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from coordinator.observability.logs import get_logger
from protocol import ErrorCode
from storage.segment import finish_plan, fsync_dir, plan_directory

from .batch import (
    ZSTD,
    BatchError,
    BatchHeader,
    assign,
    read_header,
    record_timestamps,
    split_batches,
    validate,
)
from .control import is_commit, marker_batch
from .producers import ProducerState
from .records import RecordsError, records_of
from .segment import NO_TIMESTAMP, Segment
from .transactions import TransactionIndex

log = get_logger("coordinator.topiclog")

_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
PARTITION_METADATA = "partition.metadata"
LOG_START_OFFSET = "log-start-offset"
"""The log start offset DeleteRecords moved (Kafka's ``log-start-offset-checkpoint``), one
per partition directory, written aside, fsynced and renamed."""
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
"""Where the log cleaner's last pass ended (Kafka keeps one such file per log dir): the
segments from there on are the dirty ones."""
LEADER_EPOCH = 0  # the epoch Metadata gives for every partition


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def kafka_uuid(topic_id: uuid.UUID) -> str:
    """Kafka's text form of a topic id (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The topic configs the log obeys (topic value, else the broker default)."""

    segment_bytes: int = 1073741824
    retention_ms: int = 604800000
    retention_bytes: int = -1
    log_append_time: bool = False
    max_message_bytes: int = 1048588
    min_insync_replicas: int = 1
    segment_ms: int = 604800000
    delete: bool = True  # cleanup.policy has delete: retention applies
    compact: bool = False  # cleanup.policy has compact: the log cleaner applies
    delete_retention_ms: int = 86400000
    min_cleanable_dirty_ratio: float = 0.5


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    duplicate: bool = False


class PartitionLog:
    def __init__(self, topic: str, partition: int, directory: Path,
                 segments: list[Segment]) -> None:
        self.topic = topic
        self.partition = partition
        self.directory = directory
        self.segments = segments  # oldest first; the last is the active one
        self.producers = ProducerState()
        self.transactions = TransactionIndex()
        self._durable = 0
        self._start_offset = 0
        """Where DeleteRecords moved the log start (0: the first segment's base offset)."""
        self.cleaner_checkpoint = 0
        """The offset the log cleaner's last pass reached: segments from there are dirty."""
        self.oldest_kept_tombstone_ms: int | None = 0
        """The oldest timestamp of a tombstone or marker the last cleaning kept: the log is
        cleaned again once it is ``delete.retention.ms`` old (None: none kept; 0 after
        opening: not known)."""
        self._dir_unsynced = False  # a segment file was created whose entry is not fsynced
        self._flushing: asyncio.Future[None] | None = None
        self.closed = False
        self.leader_epoch = LEADER_EPOCH
        """The epoch appended batches are stamped with (the cluster's, with cluster.brokers
        > 1: its moves and Produce set it)."""

    # ------------------------------------------------------------------ opening / recovery
    @classmethod
    def open(cls, directory: Path, topic: str, partition: int,
             topic_id: uuid.UUID | None = None) -> PartitionLog:
        directory.mkdir(parents=True, exist_ok=True)
        finish_plan(directory, plan_directory(directory))  # an interrupted cleaning's files
        if topic_id is not None:
            write_partition_metadata(directory, topic_id)
        found = sorted((int(m.group(1)), entry) for entry in directory.iterdir()
                       if (m := _SEGMENT_RE.match(entry.name)))
        plog = cls(topic, partition, directory, [])
        segments: list[Segment] = []
        for i, (base, path) in enumerate(found):
            segment = Segment(base, path, path.stat().st_size, exists=True)
            seen: list[tuple[BatchHeader, int]] = []

            def note(header: BatchHeader, segment: Segment = segment,
                     seen: list[tuple[BatchHeader, int]] = seen) -> None:
                seen.append((header, segment.positions[-1]))

            result = segment.scan(True, note)
            for header, position in seen:  # markers are read once the scan let go of the file
                plog._track(header, header.base_offset,
                            segment.read(position, header.size) if header.is_control else None)
            segments.append(segment)
            if result.error is None:
                continue
            dropped = segment.size - result.valid_end
            segment.truncate(result.valid_end)
            later = found[i + 1:]
            log.warning("topic log tail truncated", topic=topic, partition=partition,
                        segment=str(path), position=result.valid_end, bytes_dropped=dropped,
                        reason=result.error, later_segments_deleted=len(later))
            for _, later_path in later:
                later_path.unlink(missing_ok=True)
            segment.fsync()
            break
        if not segments:  # created by the first append
            segments.append(Segment(0, directory / segment_name(0), exists=False))
        plog.segments = segments
        plog._durable = plog.log_end_offset
        plog._start_offset = min(read_offset_file(directory / LOG_START_OFFSET),
                                 plog.log_end_offset)
        plog.cleaner_checkpoint = read_offset_file(directory / CLEANER_CHECKPOINT)
        return plog

    # ------------------------------------------------------------------ offsets
    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.active.next_offset

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return max(self.segments[0].base_offset, self._start_offset)

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # ------------------------------------------------------------------ appending
    def append(self, records: bytes, config: LogConfig, now_ms: int,
               allow_zstd: bool = True) -> AppendResult:
        """Validate a produce request's records (exactly one v2 batch) and append them.

        Raises ``BatchError`` (the log is then unchanged) or ``OSError``.
        """
        self._check_open()
        batches = split_batches(records)
        if not batches:
            raise BatchError(ErrorCode.invalid_record,
                             "Produce requests must have at least one record batch per partition")
        if len(batches) > 1:
            raise BatchError(ErrorCode.invalid_record,
                             "Produce requests are only allowed to contain exactly one record "
                             "batch per partition")
        if len(records) > config.max_message_bytes:
            raise BatchError(ErrorCode.message_too_large,
                             f"The record batch size {len(records)} bytes exceeds the maximum "
                             f"allowed batch size ({config.max_message_bytes})")
        header = validate(records)
        if header.compression == ZSTD and not allow_zstd:
            raise BatchError(ErrorCode.unsupported_compression_type,
                             "Produce requests with version below 7 are not allowed to use "
                             "ZStandard compression")
        if config.compact:
            _check_keys(records, header, self.topic, self.partition)
        if header.is_transactional and not header.has_producer_id:
            raise BatchError(ErrorCode.invalid_record,
                             "Transactional records must carry a producer id")
        if header.has_producer_id:
            duplicate = self.producers.find_duplicate(header)
            if duplicate is not None:
                return AppendResult(duplicate.first_offset, duplicate.last_offset, -1,
                                    self.log_start_offset, duplicate=True)
            self.producers.check(header)
        base = self.log_end_offset
        append_time = now_ms if config.log_append_time else None
        data = assign(records, base, self.leader_epoch, append_time)
        stored = read_header(data)
        if self._should_roll(len(data), config, stored.max_timestamp):
            self._roll()
        if not self.active.file.exists:
            self._dir_unsynced = True
        self.active.append(data, stored.last_offset, stored.max_timestamp)
        self._track(stored, base, None)
        return AppendResult(base, stored.last_offset, -1 if append_time is None else append_time,
                            self.log_start_offset)

    def _should_roll(self, size: int, config: LogConfig, timestamp: int) -> bool:
        """Kafka's ``shouldRoll``: the active segment is full, or the batch to append (its max
        timestamp) is more than ``segment.ms`` after the segment's first batch."""
        active = self.active
        if active.size == 0:
            return False
        if active.size + size > config.segment_bytes:
            return True
        first = active.max_timestamps[0] if active.max_timestamps else NO_TIMESTAMP
        return first != NO_TIMESTAMP and timestamp - first > config.segment_ms

    def _track(self, header: BatchHeader, base: int, control: bytes | None) -> None:
        """What an appended (or recovered) batch changes: its producer's state and, for a
        transactional batch or a marker, the partition's open and aborted transactions."""
        self.producers.update(header, base)
        if not header.is_transactional:
            return
        if header.is_control:
            assert control is not None
            self.transactions.on_marker(header.producer_id, is_commit(control, header), base)
        else:
            self.transactions.on_transactional_batch(header.producer_id, base)

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int, now_ms: int) -> int:
        """Write a transaction's commit or abort marker; returns its offset. Raises
        ``BatchError`` (INVALID_PRODUCER_EPOCH for an older epoch) or ``OSError``."""
        self._check_open()
        self.producers.check_marker(producer_id, producer_epoch)
        base = self.log_end_offset
        data = assign(marker_batch(producer_id, producer_epoch, commit, coordinator_epoch,
                                   now_ms), base, self.leader_epoch, None)
        stored = read_header(data)
        if not self.active.file.exists:
            self._dir_unsynced = True
        self.active.append(data, stored.last_offset, stored.max_timestamp)  # no roll: tiny
        self._track(stored, base, data)
        return base

    @property
    def last_stable_offset(self) -> int:
        """The first offset a transaction still open holds (the high watermark if none)."""
        return self.transactions.last_stable_offset(self.high_watermark)

    def _roll(self) -> None:
        """Start a new segment at the log end offset; the full one is fsynced first, so a later
        segment never holds data an earlier one could lose."""
        self.active.fsync()
        base = self.log_end_offset
        segment = Segment(base, self.directory / segment_name(base), exists=False)
        segment.file.create()
        self.segments.append(segment)
        fsync_dir(self.directory)
        self._dir_unsynced = False

    async def sync(self, upto: int) -> None:
        """Return once every offset below ``upto`` is fsynced (concurrent callers share one
        fsync)."""
        while self._durable < upto:
            if self._flushing is None:
                self._flushing = asyncio.ensure_future(self._fsync_active())
            await asyncio.shield(self._flushing)

    async def _fsync_active(self) -> None:
        try:
            target = self.log_end_offset
            directory = self.directory if self._dir_unsynced else None
            fd = self.active.file.dup()  # the thread's own: evicting the cached one is harmless
            if fd is not None:
                try:
                    await asyncio.to_thread(_fsync, fd, directory)
                finally:
                    os.close(fd)
            if directory is not None:
                self._dir_unsynced = False
            self._durable = max(self._durable, target)
        finally:
            self._flushing = None

    @property
    def dirty(self) -> bool:
        return self._durable < self.log_end_offset

    def _check_open(self) -> None:
        if self.closed:
            raise BatchError(ErrorCode.unknown_topic_or_partition,
                             f"{self.topic}-{self.partition} is being deleted")

    # ------------------------------------------------------------------ reading
    def _segment_for(self, offset: int) -> int:
        bases = [s.base_offset for s in self.segments]
        return max(0, bisect.bisect_right(bases, offset) - 1)

    def read(self, offset: int, max_bytes: int, min_one: bool,
             max_offset: int | None = None) -> bytes:
        """Stored batches from the one holding ``offset``, up to ``max_bytes`` (the first whole
        batch even if larger when ``min_one``; else a partial batch, as Kafka sends), and only
        batches below ``max_offset`` (a read_committed fetch's LSO) when given."""
        upto = self.log_end_offset if max_offset is None else min(max_offset,
                                                                   self.log_end_offset)
        if offset >= upto or offset < self.log_start_offset:
            return b""
        s = self._segment_for(offset)
        segment = self.segments[s]
        i = segment.first_batch_from(offset)
        while i >= len(segment.positions):
            s += 1
            if s >= len(self.segments):
                return b""
            segment, i = self.segments[s], 0
        if segment.last_offsets[i] >= upto:
            return b""
        start = segment.positions[i]
        end = start
        j = i
        count = len(segment.positions)
        while j < count and segment.last_offsets[j] < upto:
            batch_end = segment.batch_end(j)
            if batch_end - start > max_bytes:
                break
            end = batch_end
            j += 1
        if end == start:
            end = segment.batch_end(i) if min_one else start + max(0, max_bytes)
        return segment.read(start, end - start) if end > start else b""

    def batch_bounds(self, offset: int, max_records: int,
                     max_bytes: int = 2**31 - 1) -> list[tuple[int, int]]:
        """(base offset, last offset) of the stored batches from the one holding ``offset``
        until they reach ``offset + max_records - 1``, ``max_bytes`` (the first batch counts
        whatever its size) or the log's end, from the segments' in-memory index (no read):
        what a share partition acquires whole batches by."""
        out: list[tuple[int, int]] = []
        if offset >= self.log_end_offset or offset < self.log_start_offset or max_records <= 0:
            return out
        want = offset + max_records - 1
        s = self._segment_for(offset)
        segment = self.segments[s]
        i = segment.first_batch_from(offset)
        size = 0
        while True:
            while i >= len(segment.last_offsets):
                s += 1
                if s >= len(self.segments):
                    return out
                segment, i = self.segments[s], 0
            size += segment.batch_end(i) - segment.positions[i]
            if out and size > max_bytes:
                return out
            base = segment.base_offset if i == 0 else segment.last_offsets[i - 1] + 1
            last = segment.last_offsets[i]
            out.append((base, last))
            if last >= want:
                return out
            i += 1

    def read_range(self, first: int, last: int) -> bytes:
        """The stored batches holding offsets ``first`` to ``last``, whole."""
        if last < first or first >= self.log_end_offset or last < self.log_start_offset:
            return b""
        chunks: list[bytes] = []
        s = self._segment_for(max(first, self.log_start_offset))
        i = self.segments[s].first_batch_from(first)
        while s < len(self.segments):
            segment = self.segments[s]
            if i >= len(segment.last_offsets):
                s, i = s + 1, 0
                continue
            j = i
            while j < len(segment.last_offsets) and (
                    j == i or segment.last_offsets[j - 1] < last):
                j += 1
            chunks.append(segment.read(segment.positions[i], segment.batch_end(j - 1)
                                       - segment.positions[i]))
            if segment.last_offsets[j - 1] >= last:
                break
            s, i = s + 1, 0
        return b"".join(chunks)

    def offset_for_timestamp(self, target: int) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record with a timestamp >= ``target``.

        Compressed batches are not opened: their base offset stands for the batch (an offset at
        or before the exact one)."""
        for segment in self.segments:
            if segment.largest_timestamp < target:
                continue
            for i, max_ts in enumerate(segment.max_timestamps):
                if max_ts < target:
                    continue
                data = segment.read(segment.positions[i], segment.batch_end(i)
                                    - segment.positions[i])
                header = read_header(data)
                if header.compression:
                    return max_ts, header.base_offset
                for offset, timestamp in record_timestamps(data, header):
                    if timestamp >= target:
                        return timestamp, offset
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record with the largest timestamp (ListOffsets -3)."""
        best: tuple[int, Segment, int] | None = None
        for segment in self.segments:
            for i, max_ts in enumerate(segment.max_timestamps):
                if best is None or max_ts > best[0]:
                    best = (max_ts, segment, i)
        if best is None:
            return None
        max_ts, segment, i = best
        data = segment.read(segment.positions[i], segment.batch_end(i) - segment.positions[i])
        header = read_header(data)
        if not header.compression:
            for offset, timestamp in record_timestamps(data, header):
                if timestamp == max_ts:
                    return timestamp, offset
        return max_ts, header.base_offset

    # ------------------------------------------------------------------ retention
    def delete_old_segments(self, now_ms: int, config: LogConfig) -> int:
        """Kafka's retention: delete the oldest segments whose largest timestamp is older than
        ``retention.ms``, then while the log is larger than ``retention.bytes`` by at least a
        whole segment. Deleting every segment rolls a new empty one first."""
        deletable = 0
        if not config.delete:
            return 0
        if config.retention_ms >= 0:
            for segment in self.segments:
                if segment.is_empty and segment is not self.active:
                    deletable += 1  # emptied by the log cleaner: nothing to keep
                    continue
                if segment.is_empty or segment.largest_timestamp == NO_TIMESTAMP:
                    break
                if now_ms - segment.largest_timestamp <= config.retention_ms:
                    break
                deletable += 1
        if config.retention_bytes >= 0:
            excess = self.size_bytes - config.retention_bytes
            for segment in self.segments[:deletable]:
                excess -= segment.size
            for segment in self.segments[deletable:]:
                if (segment.is_empty and segment is self.active) or excess - segment.size < 0:
                    break
                excess -= segment.size
                deletable += 1
        return self._delete_first(deletable)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: the log start offset moves to ``offset`` (never back; at most the
        high watermark, which the caller checks), durably before this returns; the segments
        wholly below it are deleted. Returns the new log start offset (the low watermark)."""
        if offset <= self.log_start_offset:
            return self.log_start_offset
        write_offset_file(self.directory / LOG_START_OFFSET, offset)
        self._start_offset = offset
        below = 0
        while below + 1 < len(self.segments) and self.segments[below + 1].base_offset <= offset:
            below += 1
        self._delete_first(below)
        self.transactions.truncate_before(self.log_start_offset)
        log.info("topic log start moved", topic=self.topic, partition=self.partition,
                 log_start_offset=self.log_start_offset)
        return self.log_start_offset

    def _delete_first(self, count: int) -> int:
        """Delete the ``count`` oldest segments (all of them: a new empty one is rolled first)."""
        if not count:
            return 0
        if count == len(self.segments):
            self._roll()
        doomed, self.segments = self.segments[:count], self.segments[count:]
        for segment in doomed:
            segment.close()
            segment.path.unlink(missing_ok=True)
        fsync_dir(self.directory)
        self.transactions.truncate_before(self.log_start_offset)
        log.info("topic log segments deleted", topic=self.topic, partition=self.partition,
                 segments=len(doomed), log_start_offset=self.log_start_offset)
        return len(doomed)

    def cleaned_upto(self, offset: int, oldest_kept_tombstone_ms: int | None) -> None:
        """The log cleaner's pass ended at ``offset`` (durably noted; a crash before it only
        makes the next pass clean again)."""
        write_offset_file(self.directory / CLEANER_CHECKPOINT, offset)
        self.cleaner_checkpoint = offset
        self.oldest_kept_tombstone_ms = oldest_kept_tombstone_ms

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for segment in self.segments:
                segment.close()

    def delete(self) -> None:
        """Close and remove the partition's directory (renamed first, as Kafka does)."""
        self.close()
        delete_directory(self.directory)


def _check_keys(batch: bytes, header: BatchHeader, topic: str, partition: int) -> None:
    """Kafka's ``LogValidator.validateKey``: every record of a compacted topic has a key."""
    try:
        keyless = any(record.key is None for record in records_of(batch, header))
    except RecordsError as exc:
        raise BatchError(ErrorCode.corrupt_message, f"Record is corrupt: {exc}") from None
    if keyless:
        raise BatchError(ErrorCode.invalid_record,
                         "Compacted topic cannot accept message without key in topic partition "
                         f"{topic}-{partition}.")


def _fsync(fd: int, directory: Path | None) -> None:
    os.fsync(fd)
    if directory is not None:
        fsync_dir(directory)


def delete_directory(directory: Path) -> None:
    doomed = directory.with_name(f"{directory.name}.{uuid.uuid4().hex}-delete")
    try:
        os.replace(directory, doomed)
    except FileNotFoundError:
        return
    shutil.rmtree(doomed, ignore_errors=True)


def write_partition_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    path = directory / PARTITION_METADATA
    text = f"version: 0\ntopic_id: {kafka_uuid(topic_id)}\n"
    if path.exists() and path.read_text() == text:
        return
    path.write_text(text)


def write_offset_file(path: Path, offset: int) -> None:
    """An offset in a file of its own, written aside, fsynced and renamed in."""
    directory = path.parent
    aside = path.with_suffix(".tmp")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, f"{offset}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(aside, path)
    fsync_dir(directory)


def read_offset_file(path: Path) -> int:
    try:
        return max(0, int(path.read_text().strip() or 0))
    except (OSError, ValueError):
        return 0


def read_partition_topic_id(directory: Path) -> str | None:
    try:
        for line in (directory / PARTITION_METADATA).read_text().splitlines():
            if line.startswith("topic_id:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None
