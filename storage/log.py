"""One coordinator partition's append-only log: a directory of segments.

Thread-safety: every method may be called from any thread; a lock serialises changes.
:meth:`PartitionLog.flush` fsyncs *outside* the lock, so a flush running in a worker thread
does not block :meth:`PartitionLog.append_batch` on the event loop.

A log opened with ``defer_writes=True`` (the coordinator runtime's, when every answer waits for
an fsync) keeps appended batches in memory and writes them in :meth:`PartitionLog.flush` or
:meth:`PartitionLog.write_pending`, just before the fsync: every batch of a round in one system
call.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from storage.budget import SizeBudget
from storage.errors import CorruptLogError, LogFailedError
from storage.framing import (
    HEADER,
    HEADER_SIZE,
    RECORD,
    RECORD_SIZE,
    BatchInfo,
    Record,
    check_batch,
    encode_batch,
)
from storage.segment import (
    ActiveSegment,
    finish_plan,
    fsync_dir,
    plan_directory,
    scan,
    segment_name,
)

log = structlog.get_logger()

DEFAULT_SEGMENT_BYTES = 100 * 1024 * 1024  # Kafka's offsets.topic.segment.bytes
TOPIC = "__consumer_offsets"

LogRecord = tuple[int, int, bytes, bytes | None]
"""A stored record: (offset, timestamp ms, key bytes, value bytes or None for a tombstone)."""


def partition_dir(log_dir: str | os.PathLike[str], partition: int, topic: str = TOPIC) -> Path:
    return Path(log_dir) / f"{topic}-{partition}"


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    base_offset: int
    path: Path
    size: int


@dataclass(frozen=True, slots=True)
class ReadPosition:
    """Where a batch starts: its segment (base offset and file inode: a compaction's swap puts
    another file there), its byte position and its base offset. A reader that stopped before
    this batch continues here instead of reading its segment from the start."""

    segment: int
    inode: int
    position: int
    offset: int


READ_CHUNK = 256 * 1024
"""What ``read_batches`` reads at a time (a larger batch is read whole)."""
READ_POSITIONS = 64
"""How many readers' positions a log remembers."""


@dataclass(frozen=True, slots=True)
class RecoveryPoint:
    """Where the log was durable and whole when a snapshot was taken: the segment, the byte
    position in it and the offset of the batch there (the snapshot's end when none was). An
    open given it trusts what lies before (as Kafka's recovery point) and scans from there."""

    segment: int
    position: int
    offset: int


@dataclass(frozen=True, slots=True)
class RecoveryInfo:
    """What :meth:`PartitionLog.open` found: load time and any torn tail it dropped."""

    load_time_ms: float
    segments: int
    bytes: int
    truncated_bytes: int
    truncate_reason: str | None


class PartitionLog:
    """The log of one coordinator partition. Create it with :meth:`open`."""

    def __init__(
        self,
        partition: int,
        directory: Path,
        segment_bytes: int,
        budget: SizeBudget,
        closed: list[SegmentInfo],
        active: ActiveSegment,
        next_offset: int,
        recovery: RecoveryInfo,
        defer_writes: bool = False,
    ) -> None:
        self.partition = partition
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.budget = budget
        self.recovery = recovery
        self._closed = closed  # sorted by base offset; immutable files
        self._active = active
        self._next_offset = next_offset
        self._lock = threading.RLock()
        self._read_positions: dict[int, ReadPosition] = {}  # where recent readers stopped
        self._failed: str | None = None
        self._closed_flag = False
        self.compaction_lock = threading.Lock()  # one compaction at a time
        self._defer_writes = defer_writes
        # batches appended but not yet written (defer_writes): their bytes count in the size
        # budget and in the active segment's logical end until they are on disk
        self._unwritten: list[bytes] = []
        self._unwritten_bytes = 0
        self._write_lock = threading.Lock()  # one writer of the active segment at a time
        self.recovery_point: RecoveryPoint | None = None
        """A position below which every record's offset is below its offset (a snapshot's
        recovery point that held at open, or the newest snapshot's): reads from that offset
        on start there (:meth:`segment_buffers`)."""

    # ------------------------------------------------------------------ opening / recovery

    @classmethod
    def open(
        cls,
        log_dir: str | os.PathLike[str],
        partition: int,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        *,
        budget: SizeBudget | None = None,
        topic: str = TOPIC,
        defer_writes: bool = False,
        recovery_point: RecoveryPoint | None = None,
    ) -> PartitionLog:
        """Open (creating if needed) ``<log_dir>/__consumer_offsets-<partition>`` and recover it.

        A torn or corrupt tail of the newest segment is truncated at the last whole batch (and
        logged); any other damage raises :class:`CorruptLogError`. With ``defer_writes`` appended
        batches reach the file in :meth:`flush` (see the module's docstring). With a
        ``recovery_point`` (a snapshot's) the bytes before it are trusted, not read: segments
        before its segment are taken as they are, its segment is scanned from its position, and
        if the batch there is not the one it names, the whole log is scanned after all.
        """
        if segment_bytes <= 0:
            raise ValueError("segment_bytes must be positive")
        started = time.perf_counter()
        directory = partition_dir(log_dir, partition, topic)
        directory.mkdir(parents=True, exist_ok=True)
        plan = plan_directory(directory)
        finish_plan(directory, plan)
        budget = budget if budget is not None else SizeBudget()

        closed: list[SegmentInfo] = []
        items = list(plan.segments.items())
        if recovery_point is not None and recovery_point.segment not in plan.segments:
            recovery_point = None
        held: RecoveryPoint | None = None
        expected = 0
        truncated = 0
        reason: str | None = None
        total = 0
        last_base, last_size = 0, 0
        for i, (base, path) in enumerate(items):
            is_last = i == len(items) - 1
            if base < expected:
                raise CorruptLogError(
                    partition, str(path), 0, f"segment base {base} overlaps offsets < {expected}"
                )
            if recovery_point is not None and base < recovery_point.segment:
                size = path.stat().st_size  # trusted: fsynced before the snapshot was taken
                expected = max(expected, base)
                total += size
                closed.append(SegmentInfo(base, path, size))
                continue
            shift = 0  # the bytes of the segment before buf (trusted: not read)
            if recovery_point is not None and base == recovery_point.segment:
                shift = recovery_point.position
                buf = _read_from(path, shift)
                if buf is None or not _recovery_point_holds(buf, recovery_point):
                    log.warning("recovery_point_ignored", partition=partition, segment=str(path),
                                position=shift,
                                reason="the batch it names is not there; scanning the log")
                    return cls.open(log_dir, partition, segment_bytes, budget=budget,
                                    topic=topic, defer_writes=defer_writes)
                result = scan(buf, recovery_point.offset)
                expected = max(expected, recovery_point.offset)
                held = recovery_point
            else:
                buf = path.read_bytes()
                result = scan(buf, base)
            valid_end = shift + result.valid_end
            if result.error is not None:
                if not is_last or result.more_valid_data:
                    raise CorruptLogError(partition, str(path), valid_end, result.error)
                truncated = result.file_size - result.valid_end
                reason = result.error
                log.warning(
                    "log_tail_truncated",
                    partition=partition,
                    segment=str(path),
                    position=valid_end,
                    bytes_dropped=truncated,
                    reason=result.error,
                )
                os.truncate(path, valid_end)
            if result.last_offset is not None:
                expected = result.last_offset + 1
            else:
                expected = max(expected, base)
            total += valid_end
            if is_last:
                last_base, last_size = base, valid_end
            else:
                closed.append(SegmentInfo(base, path, valid_end))
        if not items:
            last_base, last_size = 0, 0
        active = ActiveSegment(last_base, directory / segment_name(last_base), last_size)
        if not items:
            fsync_dir(directory)
        budget.add(total)
        elapsed_ms = (time.perf_counter() - started) * 1000
        recovery = RecoveryInfo(elapsed_ms, len(items) or 1, total, truncated, reason)
        plog = cls(partition, directory, segment_bytes, budget, closed, active, expected, recovery,
                   defer_writes)
        plog.recovery_point = held
        return plog

    # ------------------------------------------------------------------ writing

    @property
    def next_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._next_offset

    @property
    def size_bytes(self) -> int:
        """Bytes the log holds, counting appended batches not written yet (their budget)."""
        with self._lock:
            return sum(s.size for s in self._closed) + self._active.size + self._unwritten_bytes

    @property
    def failed(self) -> str | None:
        """Why the log refuses writes (a write whose partial bytes could not be removed)."""
        return self._failed

    def append_batch(self, records: Sequence[Record], timestamp_ms: int) -> int:
        """Append ``records`` (key bytes, value bytes or None) as one all-or-nothing batch.

        Returns the offset of the last record. Does not fsync (see :meth:`flush`). On
        ``OSError`` (e.g. ENOSPC, EDQUOT, or :class:`StoreFullError` from the size cap) nothing
        of the batch stays in the log and the error propagates. With ``defer_writes`` the batch
        is written by the next :meth:`flush`, unless it starts a new segment: then what is
        pending is written, and the segment rolled, here.
        """
        if self._defer_writes:
            with self._lock:
                last = self._defer(records, timestamp_ms)
            if last is not None:
                return last
            with self._write_lock:  # rolling: the pending bytes go to the old segment first
                self._write_unwritten()
                return self._append_now(records, timestamp_ms)
        return self._append_now(records, timestamp_ms)

    def _defer(self, records: Sequence[Record], timestamp_ms: int) -> int | None:
        """Keep the batch in memory; None (and nothing kept) if it must start a new segment."""
        self._check_writable()
        end = self._active.size + self._unwritten_bytes
        base = self._next_offset
        data = encode_batch(base, timestamp_ms, records)
        if end > 0 and end + len(data) > self.segment_bytes:
            return None
        self.budget.reserve(len(data))
        self._unwritten.append(data)
        self._unwritten_bytes += len(data)
        self._next_offset = base + len(records)
        return self._next_offset - 1

    def _append_now(self, records: Sequence[Record], timestamp_ms: int) -> int:
        with self._lock:
            self._check_writable()
            base = self._next_offset
            data = encode_batch(base, timestamp_ms, records)
            self.budget.reserve(len(data))
            try:
                if self._active.size > 0 and self._active.size + len(data) > self.segment_bytes:
                    self._roll()
                self._active.append(data)
            except LogFailedError as exc:
                self._failed = str(exc)
                raise
            except BaseException:
                self.budget.release(len(data))
                raise
            self._next_offset = base + len(records)
            return self._next_offset - 1

    def _write_unwritten(self) -> int:
        """Write the batches kept in memory (the caller holds the write lock); returns the offset
        up to which (exclusive) records are now in the file. A failed write leaves the log
        refusing writes until it is reopened: the batches it lost are gone from memory too."""
        with self._lock:
            self._check_writable()
            chunks, self._unwritten = self._unwritten, []
            written_to = self._next_offset
            active = self._active
        if not chunks:
            return written_to
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        try:
            active.write_at_end(active.fd, data)  # close() waits for the write lock
        except (OSError, LogFailedError) as exc:
            with self._lock:
                self._failed = (f"partition {self.partition}: a deferred write failed ({exc}); "
                                "reopen the log to recover")
            log.error("log_write_failed", partition=self.partition, bytes=len(data),
                      error=str(exc))
            raise
        with self._lock:
            active.size += len(data)
            self._unwritten_bytes -= len(data)
        return written_to

    def _check_writable(self) -> None:
        if self._closed_flag:
            raise ValueError(f"partition {self.partition}: log is closed")
        if self._failed is not None:
            raise LogFailedError(self._failed)

    def _roll(self) -> None:
        """Close the full active segment (fsynced, so a later segment never holds data that an
        earlier one could lose) and start a new one at the next offset."""
        old = self._active
        old.fsync()
        new_path = self.directory / segment_name(self._next_offset)
        new = ActiveSegment(self._next_offset, new_path, 0)
        try:
            fsync_dir(self.directory)
        except OSError:
            new.close()
            new_path.unlink(missing_ok=True)
            raise
        old.close()
        self._closed.append(SegmentInfo(old.base_offset, old.path, old.size))
        self._active = new

    def flush(self) -> int:
        """Write (``defer_writes``) and fsync what was appended so far; returns the offset up
        to which (exclusive) records are now durable. The fsync runs without holding the log's
        lock."""
        with self._write_lock:
            durable = self._write_unwritten()
            with self._lock:
                self._check_writable()
                fd = os.dup(self._active.fd)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return durable

    def write_pending(self) -> tuple[int, int]:
        """:meth:`flush` without the fsync: write the batches kept in memory
        (``defer_writes``); returns the offset up to which (exclusive) records are now in the
        file, and the log's own descriptor of that file, for an fsync to be started at once,
        on the thread that appends (its next append may roll the segment and close it)."""
        with self._write_lock:
            written_to = self._write_unwritten()
            with self._lock:
                self._check_writable()
                return written_to, self._active.fd

    # ------------------------------------------------------------------ reading

    def segments(self) -> list[SegmentInfo]:
        """All segments, oldest first; the last one is the active segment."""
        with self._lock:
            active = SegmentInfo(self._active.base_offset, self._active.path, self._active.size)
            return [*self._closed, active]

    def segment_buffers(self, from_offset: int = 0) -> Iterator[tuple[SegmentInfo, bytes, int]]:
        """(segment, bytes, start): the bytes from byte ``start`` on of every segment that may
        hold records with offset >= ``from_offset``, as present when the call is made (whole,
        validated batches), oldest first. They start at the :attr:`recovery_point` if
        ``from_offset`` is at or past it (the bytes before hold lower offsets only), else at
        0. The segments are opened at once, as :meth:`read` does."""
        point = self.recovery_point
        handles = self._open_from(from_offset)
        if point is None or from_offset < point.offset:
            return ((seg, buf, 0) for seg, buf in self._buffers(handles))
        return self._buffers_from(handles, point)

    def _buffers_from(self, handles: list[tuple[SegmentInfo, int]], point: RecoveryPoint
                      ) -> Iterator[tuple[SegmentInfo, bytes, int]]:
        at = next((i for i, (seg, _) in enumerate(handles)
                   if seg.base_offset == point.segment and point.position <= seg.size), None)
        buf = b""
        if at is not None:
            seg, fd = handles[at]
            buf = _read_fd(fd, seg.size, point.position)
            if buf:
                info = check_batch(buf, 0, len(buf))
                if not isinstance(info, BatchInfo) or info.base_offset != point.offset:
                    at = None  # not a batch boundary any more (compacted meanwhile)
        if at is None:
            yield from ((seg, data, 0) for seg, data in self._buffers(handles))
            return
        for _, fd in handles[:at + 1]:
            os.close(fd)
        yield handles[at][0], buf, point.position
        yield from ((seg, data, 0) for seg, data in self._buffers(handles[at + 1:]))

    def read(self, from_offset: int = 0) -> Iterator[LogRecord]:
        """Every record with offset >= ``from_offset`` present when the call is made, in order.

        The segments are opened at once, so a compaction swapping files meanwhile does not
        disturb an iteration in progress.
        """
        return self._iter(self._open_from(from_offset), from_offset)

    def read_batches(self, from_offset: int = 0
                     ) -> Generator[tuple[ReadPosition, list[LogRecord]], None, None]:
        """Each batch holding offsets >= ``from_offset`` present when the call is made, with
        its records from ``from_offset``, read in chunks as iterated. The last batch a reader
        got is remembered (a few per log), so a reader continuing from there does not read its
        segment from the start: it starts at that batch if it is still in the segment holding
        ``from_offset`` (same file) at or before it."""
        start = self._read_position(from_offset)
        handles = self._open_from(from_offset)
        last: ReadPosition | None = None
        try:
            for i, (seg, fd) in enumerate(handles):
                inode = os.fstat(fd).st_ino
                pos = 0
                if (i == 0 and start is not None and start.segment == seg.base_offset
                        and start.inode == inode and start.offset <= from_offset
                        and start.position <= seg.size):
                    pos = start.position
                for batch in self._batches_of(seg, fd, inode, pos, from_offset):
                    last = batch[0]
                    yield batch
        finally:
            for _, fd in handles:
                os.close(fd)
            if last is not None:
                self._remember_read(last)

    def _read_position(self, from_offset: int) -> ReadPosition | None:
        best = None
        for position in list(self._read_positions.values()):
            if position.offset <= from_offset and (best is None or position.offset > best.offset):
                best = position
        return best

    def _remember_read(self, position: ReadPosition) -> None:
        positions = self._read_positions
        positions.pop(position.offset, None)
        positions[position.offset] = position
        while len(positions) > READ_POSITIONS:
            del positions[next(iter(positions))]

    def _batches_of(self, seg: SegmentInfo, fd: int, inode: int, pos: int, from_offset: int
                    ) -> Iterator[tuple[ReadPosition, list[LogRecord]]]:
        """The segment's batches from byte ``pos``: those wholly below ``from_offset`` are
        skipped by their headers alone, the others checked (CRC) and decoded."""
        unpack = HEADER.unpack_from
        while pos < seg.size:
            buf = _read_fd(fd, min(seg.size, pos + READ_CHUNK), pos)
            at = 0
            while at + HEADER_SIZE <= len(buf):
                length, _, _, _, _, base, last_delta, _, _ = unpack(buf, at)
                size = 4 + length
                if size < HEADER_SIZE or at + size > len(buf):
                    break
                if base + last_delta >= from_offset:
                    info = check_batch(buf, at, at + size)
                    if not isinstance(info, BatchInfo):
                        raise CorruptLogError(self.partition, str(seg.path), pos + at, info)
                    records = list(iter_segment_records(self.partition, seg,
                                                        buf[at:at + size], from_offset))
                    yield ReadPosition(seg.base_offset, inode, pos + at, base), records
                at += size
            if at == 0:  # a batch larger than a chunk (or not a batch)
                length = unpack(buf, 0)[0] if len(buf) >= HEADER_SIZE else 0
                if len(buf) < HEADER_SIZE or 4 + length < HEADER_SIZE \
                        or pos + 4 + length > seg.size:
                    raise CorruptLogError(self.partition, str(seg.path), pos,
                                          "truncated or bad batch header")
                buf = _read_fd(fd, pos + 4 + length, pos)
                info = check_batch(buf, 0, len(buf))
                if not isinstance(info, BatchInfo):
                    raise CorruptLogError(self.partition, str(seg.path), pos, info)
                if info.last_offset >= from_offset:
                    yield (ReadPosition(seg.base_offset, inode, pos, info.base_offset),
                           list(iter_segment_records(self.partition, seg, buf, from_offset)))
                at = info.size
            pos += at

    def _open_from(self, from_offset: int) -> list[tuple[SegmentInfo, int]]:
        with self._lock:
            segs = self.segments()
            bases = [s.base_offset for s in segs]
            start = max(0, bisect.bisect_right(bases, from_offset) - 1)
            handles = []
            try:
                for s in segs[start:]:
                    handles.append((s, os.open(s.path, os.O_RDONLY)))
            except BaseException:
                for _, fd in handles:
                    os.close(fd)
                raise
        return handles

    @staticmethod
    def _buffers(handles: list[tuple[SegmentInfo, int]]) -> Iterator[tuple[SegmentInfo, bytes]]:
        try:
            for i, (seg, fd) in enumerate(handles):
                buf = _read_fd(fd, seg.size)
                os.close(fd)
                handles[i] = (seg, -1)
                yield seg, buf
        finally:
            for _, fd in handles:
                if fd >= 0:
                    os.close(fd)

    def _iter(
        self, handles: list[tuple[SegmentInfo, int]], from_offset: int
    ) -> Iterator[LogRecord]:
        for seg, buf in self._buffers(handles):
            yield from iter_segment_records(self.partition, seg, buf, from_offset)

    # ------------------------------------------------------------------ compaction support

    def closed_segments(self) -> list[SegmentInfo]:
        with self._lock:
            return list(self._closed)

    def replace_segments(self, replaced: list[SegmentInfo], new: SegmentInfo | None) -> None:
        """Swap bookkeeping after compaction renamed files (called with the lock held)."""
        bases = {s.base_offset for s in replaced}
        if self.recovery_point is not None and self.recovery_point.segment in bases:
            self.recovery_point = None  # its positions are not this file's
        kept = [s for s in self._closed if s.base_offset not in bases]
        if new is not None:
            kept.append(new)
        kept.sort(key=lambda s: s.base_offset)
        self._closed = kept

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Close the files. Batches appended but not written (``defer_writes``) are dropped:
        call :meth:`flush` first to keep them. Waits for a write in progress on another
        thread."""
        with self._write_lock, self._lock:
            if not self._closed_flag:
                self._unwritten = []
                self._active.close()
                self._closed_flag = True

    def __enter__(self) -> PartitionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_from(path: Path, position: int) -> bytes | None:
    """The bytes of a file from ``position``; None if it is shorter than that."""
    with open(path, "rb") as f:
        if position > os.fstat(f.fileno()).st_size:
            return None
        f.seek(position)
        return f.read()


def _recovery_point_holds(buf: bytes, point: RecoveryPoint) -> bool:
    """``buf`` (a segment from the point's position on) starts with the batch the point names,
    or is empty (nothing was appended after it)."""
    if not buf:
        return True
    info = check_batch(buf, 0, len(buf))
    return isinstance(info, BatchInfo) and info.base_offset == point.offset


def _read_fd(fd: int, size: int, start: int = 0) -> bytes:
    chunks = []
    pos = start
    while pos < size:
        chunk = os.pread(fd, size - pos, pos)
        if not chunk:
            break
        chunks.append(chunk)
        pos += len(chunk)
    return b"".join(chunks) if len(chunks) != 1 else chunks[0]


def iter_segment_records(
    partition: int, seg: SegmentInfo, buf: bytes, from_offset: int = 0
) -> Iterator[LogRecord]:
    """Records of a segment's (validated) bytes with offset >= ``from_offset``."""
    unpack_header = HEADER.unpack_from
    unpack_record = RECORD.unpack_from
    pos = 0
    end = len(buf)
    while pos < end:
        length, _crc, _m, _a, _r, base, last_delta, ts, count = unpack_header(buf, pos)
        batch_end = pos + 4 + length
        if base + last_delta < from_offset:
            pos = batch_end
            continue
        p = pos + HEADER_SIZE
        for _ in range(count):
            delta, klen, vlen = unpack_record(buf, p)
            p += RECORD_SIZE
            key = buf[p : p + klen]
            p += klen
            offset = base + delta
            if vlen < 0:
                if offset >= from_offset:
                    yield offset, ts, key, None
            else:
                if offset >= from_offset:
                    yield offset, ts, key, buf[p : p + vlen]
                p += vlen
        if p != batch_end:
            raise CorruptLogError(partition, str(seg.path), pos, "records overrun their batch")
        pos = batch_end


__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "LogRecord",
    "PartitionLog",
    "ReadPosition",
    "RecoveryInfo",
    "RecoveryPoint",
    "SegmentInfo",
    "iter_segment_records",
    "partition_dir",
]
