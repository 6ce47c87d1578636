"""Snapshots of a coordinator partition: the records its state needs, up to a log offset.

A snapshot is the partition's log up to ``end_offset`` (exclusive) as the log cleaner would
leave it: the latest record of each key (with the delta rule of ``storage.compaction``),
tombstones until ``log.cleaner.delete.retention.ms`` after their timestamp, each with its
offset and timestamp. It holds records, not objects: whatever record type the log holds, a
snapshot holds it too, so a state that replays records is rebuilt from a snapshot exactly as
from the log (a record type added later cannot be left out). Loading a partition is then: the
newest valid snapshot, then the log from its ``end_offset``.

Files, in the partition's directory next to its segments: ``<end_offset, 20 digits>.snapshot``.
A snapshot is written to ``<end>.snapshot.part``, fsynced, renamed, and the directory fsynced;
``.part`` files left by a crash are deleted when the partition loads. A snapshot that does not
check out (bad magic, another version, CRC32C mismatch, another partition, records out of order,
an end past the log's end) is ignored with a ``snapshot_ignored`` warning and the next older one
tried; with none, the log is replayed from its start: a snapshot is never trusted over the log.
The format is in ``storage/FORMAT.md``.

``COORDINATOR_SNAPSHOT_WRITE_PAUSE_MS`` (tests only) holds a snapshot write that long with half
of the file written, so a test can kill the server while a snapshot is being written.
"""

from __future__ import annotations

import os
import re
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from storage.framing import crc_of
from storage.log import LogRecord, PartitionLog, RecoveryPoint
from storage.replay import LatestRecords, latest_records
from storage.segment import fsync_dir

log = structlog.get_logger()

MAGIC = b"KCSN"
VERSION = 1
# magic(4s) crc(u32: CRC32C of every byte after it) version(u16) reserved(u16) partition(i32)
# end_offset(i64) created_ms(i64) recovery segment(i64) position(i64) offset(i64) count(u32)
HEADER = struct.Struct(">4sIHHiqqqqqI")
HEADER_SIZE = HEADER.size  # 68
CRC_START = 8
# offset(i64) timestamp(i64) key_length(u32) value_length(i32, -1 = tombstone)
RECORD = struct.Struct(">qqIi")
RECORD_SIZE = RECORD.size  # 24

SUFFIX = ".snapshot"
PART_SUFFIX = ".snapshot.part"
_SNAPSHOT_RE = re.compile(r"^(\d{20})\.snapshot$")
_PART_RE = re.compile(r"^(\d{20})\.snapshot\.part$")
KEEP = 2
"""Snapshots kept per partition: the newest, and the one before it should the newest be lost."""

_PAUSE_MS = float(os.environ.get("COORDINATOR_SNAPSHOT_WRITE_PAUSE_MS", "0"))


def snapshot_name(end_offset: int) -> str:
    return f"{end_offset:020d}{SUFFIX}"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A snapshot read from its file (or just written): the records of ``[0, end_offset)``."""

    path: Path
    partition: int
    end_offset: int
    created_ms: int
    records: list[LogRecord]
    recovery_point: RecoveryPoint | None = None
    """Where the log was when the snapshot was taken: an open may trust what lies before."""


class SnapshotError(ValueError):
    """Why a snapshot file cannot be used."""


def encode(partition: int, end_offset: int, created_ms: int,
           records: Sequence[LogRecord], recovery_point: RecoveryPoint | None = None) -> bytes:
    """A snapshot file's bytes."""
    out = bytearray(HEADER_SIZE)
    pack = RECORD.pack
    for offset, ts, key, value in records:
        if value is None:
            out += pack(offset, ts, len(key), -1)
            out += key
        else:
            out += pack(offset, ts, len(key), len(value))
            out += key
            out += value
    point = recovery_point or RecoveryPoint(-1, -1, -1)
    HEADER.pack_into(out, 0, MAGIC, 0, VERSION, 0, partition, end_offset, created_ms,
                     point.segment, point.position, point.offset, len(records))
    struct.pack_into(">I", out, 4, crc_of(memoryview(out)[CRC_START:]))
    return bytes(out)


def decode(path: Path, buf: bytes, partition: int) -> Snapshot:
    """Check and parse a snapshot file's bytes; :class:`SnapshotError` says what is wrong."""
    if len(buf) < HEADER_SIZE:
        raise SnapshotError(f"truncated header ({len(buf)} bytes)")
    (magic, crc, version, _res, part, end_offset, created_ms, segment, position, point_offset,
     count) = HEADER.unpack_from(buf)
    if magic != MAGIC:
        raise SnapshotError(f"bad magic {magic!r}")
    if version != VERSION:
        raise SnapshotError(f"version {version}, this build reads version {VERSION}")
    if crc_of(memoryview(buf)[CRC_START:]) != crc:
        raise SnapshotError("CRC32C mismatch")
    if part != partition:
        raise SnapshotError(f"written for partition {part}")
    if path.name != snapshot_name(end_offset):
        raise SnapshotError(f"its end offset {end_offset} is not its name's")
    records: list[LogRecord] = []
    append = records.append
    unpack = RECORD.unpack_from
    pos = HEADER_SIZE
    end = len(buf)
    previous = -1
    try:
        for _ in range(count):
            offset, ts, klen, vlen = unpack(buf, pos)
            pos += RECORD_SIZE
            key = buf[pos : pos + klen]
            pos += klen
            if vlen < 0:
                append((offset, ts, key, None))
            else:
                append((offset, ts, key, buf[pos : pos + vlen]))
                pos += vlen
            if not previous < offset < end_offset or len(key) != klen:
                raise SnapshotError(f"record offset {offset} out of order or past the end")
            previous = offset
    except struct.error as exc:
        raise SnapshotError(f"truncated records: {exc}") from None
    if pos != end:
        raise SnapshotError(f"records end at byte {pos}, the file at {end}")
    point = None if segment < 0 else RecoveryPoint(segment, position, point_offset)
    return Snapshot(path, partition, end_offset, created_ms, records, point)


def snapshot_files(directory: Path) -> list[tuple[int, Path]]:
    """The snapshot files of a partition directory, (end offset, path), newest first."""
    found = []
    for entry in directory.iterdir():
        if m := _SNAPSHOT_RE.match(entry.name):
            found.append((int(m.group(1)), entry))
    return sorted(found, reverse=True)


def oldest_snapshot_end(directory: Path) -> int | None:
    """The lowest end offset of the snapshots a load may fall back to, None without any: log
    compaction keeps tombstones at or past it (a snapshot may hold an older record of their
    key, which only the tombstone supersedes)."""
    files = snapshot_files(directory)
    return files[-1][0] if files else None


def newest(directory: Path, partition: int) -> Snapshot | None:
    """The newest valid snapshot in a partition's directory (read before its log is opened:
    the open may start from its recovery point); leftovers of an interrupted write are deleted,
    snapshots that do not check out are skipped (logged). Check it against the opened log
    with :func:`reaches`."""
    if not directory.is_dir():
        return None
    for entry in list(directory.iterdir()):
        if _PART_RE.match(entry.name):
            log.warning("snapshot_part_removed", partition=partition, path=str(entry),
                        reason="a snapshot write that did not finish")
            entry.unlink(missing_ok=True)
    for _end_offset, path in snapshot_files(directory):
        try:
            return decode(path, path.read_bytes(), partition)
        except (SnapshotError, OSError) as exc:
            log.warning("snapshot_ignored", partition=partition, path=str(path),
                        reason=str(exc), action="trying an older snapshot, else the whole log")
    return None


def reaches(snapshot: Snapshot, plog: PartitionLog) -> bool:
    """Whether the log holds every offset the snapshot covers (it cannot be trusted over the
    log otherwise: logged, and the whole log is replayed)."""
    if snapshot.end_offset <= plog.next_offset:
        return True
    log.warning("snapshot_ignored", partition=plog.partition, path=str(snapshot.path),
                reason=f"it ends at offset {snapshot.end_offset}, past the log's end "
                       f"{plog.next_offset}", action="replaying the whole log")
    return False


def load(plog: PartitionLog) -> Snapshot | None:
    """The newest valid snapshot of an open log's partition, if the log reaches it."""
    found = newest(plog.directory, plog.partition)
    return found if found is not None and reaches(found, plog) else None


def write(directory: Path, partition: int, end_offset: int, records: Sequence[LogRecord],
          created_ms: int | None = None, recovery_point: RecoveryPoint | None = None
          ) -> Snapshot:
    """Write a snapshot crash-safely (``.part``, fsync, rename, directory fsync)."""
    created = int(time.time() * 1000) if created_ms is None else created_ms
    data = encode(partition, end_offset, created, records, recovery_point)
    final = directory / snapshot_name(end_offset)
    part = final.with_name(final.name + ".part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        if _PAUSE_MS:  # tests: half of the file written, then a pause to be killed in
            half = len(data) // 2
            _write_all(fd, view[:half])
            log.info("snapshot_write_paused", partition=partition, path=str(part),
                     pause_ms=_PAUSE_MS)
            time.sleep(_PAUSE_MS / 1000.0)
            view = view[half:]
        _write_all(fd, view)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        part.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(part, final)
    fsync_dir(directory)
    return Snapshot(final, partition, end_offset, created, list(records), recovery_point)


def _write_all(fd: int, view: memoryview) -> None:
    written = 0
    while written < len(view):
        written += os.write(fd, view[written:])


def prune(directory: Path, keep: Sequence[Path]) -> None:
    """Delete the partition's snapshot files other than ``keep``."""
    kept = {p.name for p in keep}
    removed = False
    for _, path in snapshot_files(directory):
        if path.name not in kept:
            path.unlink(missing_ok=True)
            removed = True
    if removed:
        fsync_dir(directory)


def take(plog: PartitionLog, end_offset: int, *, base: Path | None = None,
         tombstone_retention_ms: int = 86_400_000, now_ms: int | None = None) -> Snapshot:
    """Write a snapshot of ``plog`` up to ``end_offset`` (records that are durable), from the
    snapshot at ``base`` (if it still checks out) and the log after it, or from the whole log;
    then keep it and ``base`` only. Safe in a thread while the log is appended to."""
    started = time.perf_counter()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    collector = LatestRecords()
    start = 0
    previous: Snapshot | None = None
    if base is not None:
        try:
            previous = decode(base, base.read_bytes(), plog.partition)
        except (SnapshotError, OSError) as exc:
            log.warning("snapshot_ignored", partition=plog.partition, path=str(base),
                        reason=str(exc), action="snapshotting the whole log")
    if previous is not None and previous.end_offset <= end_offset:
        collector.add_all(previous.records)
        start = previous.end_offset
    latest_records(plog, start, end_offset, collector=collector)
    records = collector.result(drop_tombstones_before=now - tombstone_retention_ms)
    snapshot = write(plog.directory, plog.partition, end_offset, records, now,
                     collector.recovery_point)
    if collector.recovery_point is not None:  # later reads from this snapshot on start there
        plog.recovery_point = collector.recovery_point
    prune(plog.directory, [snapshot.path] + ([previous.path] if previous is not None else []))
    log.info("snapshot_written", partition=plog.partition, end_offset=end_offset,
             records=len(records), records_read=collector.count,
             duration_ms=round((time.perf_counter() - started) * 1000, 1))
    return snapshot
