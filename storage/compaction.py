"""Log compaction, like Kafka's log cleaner for ``__consumer_offsets``.

The closed segments (every segment but the active one) are rewritten keeping only the latest
record of each key; a tombstone that is the latest for its key is kept until
``tombstone_retention_ms`` after its timestamp, then dropped. A record of a delta type
(``storage.records.DELTA_TYPES``: a ShareUpdate) is not superseded by later records of its own
key but by a later record (value or tombstone) of its snapshot type with the same key fields:
it is kept unless such a record exists. The work is done on a snapshot of
the closed segments (immutable files) without the log's lock; only the final file swap takes
it, for a few renames.

Snapshots (``storage.snapshot``): a tombstone at or past the end offset of the oldest snapshot of
the partition is kept whatever its age, since that snapshot may hold an older record of its key
which, loaded with the log after it, only the tombstone supersedes.

Crash safety: the output is written to ``<base>.log.cleaned`` and fsynced; renaming it to
``<base>.log.<end>.swap`` is the commit point; the old segments of ``[base, end)`` are then
removed and the swap file renamed to ``<base>.log``. On open, ``.cleaned`` files are deleted
(compaction never committed) and ``.swap`` files are completed (see ``segment.plan_directory``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import structlog

from storage.framing import HEADER, HEADER_SIZE, RECORD, RECORD_SIZE, encode_batch
from storage.log import PartitionLog, SegmentInfo
from storage.records.registry import DELTA_KEY_PREFIXES
from storage.segment import cleaned_name, fsync_dir, segment_name, swap_name
from storage.snapshot import oldest_snapshot_end

log = structlog.get_logger()


@dataclass(frozen=True, slots=True)
class CompactionResult:
    segments_before: int
    segments_after: int
    bytes_before: int
    bytes_after: int
    records_before: int
    records_after: int
    tombstones_dropped: int
    duration_ms: float


class _Batch:
    __slots__ = ("base", "records", "timestamp")

    def __init__(self, base: int, timestamp: int) -> None:
        self.base = base
        self.timestamp = timestamp
        self.records: list[tuple[int, bytes, bytes | None]] = []


def _batches(buf: bytes) -> list[_Batch]:
    out = []
    pos = 0
    while pos < len(buf):
        length, _c, _m, _a, _r, base, _ld, ts, count = HEADER.unpack_from(buf, pos)
        batch = _Batch(base, ts)
        p = pos + HEADER_SIZE
        for _ in range(count):
            delta, klen, vlen = RECORD.unpack_from(buf, p)
            p += RECORD_SIZE
            key = buf[p : p + klen]
            p += klen
            value = None
            if vlen >= 0:
                value = buf[p : p + vlen]
                p += vlen
            batch.records.append((base + delta, key, value))
        out.append(batch)
        pos += 4 + length
    return out


def _encode_kept(batch: _Batch, kept: list[tuple[int, bytes, bytes | None]]) -> bytes:
    base = kept[0][0]
    return encode_batch(
        base,
        batch.timestamp,
        [(k, v) for _, k, v in kept],
        [off - base for off, _, _ in kept],
    )


def compact(
    plog: PartitionLog,
    tombstone_retention_ms: int,
    now_ms: int | None = None,
    deltas: Mapping[bytes, bytes] = DELTA_KEY_PREFIXES,
) -> CompactionResult:
    """Compact ``plog``'s closed segments; see the module docstring. Safe to run in a thread
    while the log is being appended to and read. ``deltas`` maps the 2-byte type id of a delta
    record type to its snapshot type's (the key bytes after it are the same for both)."""
    started = time.perf_counter()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    with plog.compaction_lock:
        snapshot = plog.closed_segments()
        if not snapshot:
            return CompactionResult(0, 0, 0, 0, 0, 0, 0, 0.0)
        contents = [_batches(Path(s.path).read_bytes()) for s in snapshot]
        # a snapshot may hold an older record of a tombstone's key: the tombstone stays
        protected = oldest_snapshot_end(plog.directory)
        keep_tombstones_from = _NEVER if protected is None else protected

        latest: dict[bytes, int] = {}
        records_before = 0
        for batches in contents:
            for batch in batches:
                for off, key, _ in batch.records:
                    latest[key] = off
                records_before += len(batch.records)
        marks = _mark_deltas(latest, deltas) if deltas else {}

        # which records survive, per segment, as encoded batches
        outputs: list[list[bytes]] = []
        changed: list[bool] = []
        records_after = 0
        tombstones_dropped = 0
        for batches in contents:
            encoded: list[bytes] = []
            dropped_any = False
            for batch in batches:
                if marks:  # a delta survives until a later snapshot (see _mark_deltas)
                    kept = [r for r in batch.records
                            if latest[r[1]] == r[0] or r[0] >= marks.get(r[1], _NEVER)]
                else:
                    kept = [r for r in batch.records if latest[r[1]] == r[0]]
                if batch.timestamp + tombstone_retention_ms <= now:
                    live = [r for r in kept if r[2] is not None or r[0] >= keep_tombstones_from]
                    tombstones_dropped += len(kept) - len(live)
                    kept = live
                if len(kept) != len(batch.records):
                    dropped_any = True
                if kept:
                    encoded.append(_encode_kept(batch, kept))
                    records_after += len(kept)
            outputs.append(encoded)
            changed.append(dropped_any)

        groups = _group(snapshot, outputs, changed, plog.segment_bytes)
        after_segments = {s.base_offset for s in snapshot}
        bytes_before = sum(s.size for s in snapshot)
        for first, last in groups:
            members = snapshot[first : last + 1]
            data = b"".join(b for o in outputs[first : last + 1] for b in o)
            end = _end_offset(plog, members[-1])
            _swap(plog, members, data, end)
            for m in members[1:]:
                after_segments.discard(m.base_offset)
        closed_after = plog.closed_segments()
        bytes_after = sum(s.size for s in closed_after if s.base_offset in after_segments)

    result = CompactionResult(
        segments_before=len(snapshot),
        segments_after=len(after_segments),
        bytes_before=bytes_before,
        bytes_after=bytes_after,
        records_before=records_before,
        records_after=records_after,
        tombstones_dropped=tombstones_dropped,
        duration_ms=(time.perf_counter() - started) * 1000,
    )
    log.info("log_compacted", partition=plog.partition, **_fields(result))
    return result


_NEVER = 1 << 63  # above every offset: "not a delta key"


def _mark_deltas(latest: dict[bytes, int], deltas: Mapping[bytes, bytes]) -> dict[bytes, int]:
    """For each delta key: the offset of the latest record of its snapshot key, +1 (0 if none);
    a delta record survives iff its offset is at least that. Its entry in ``latest`` becomes -1
    (no record offset), so every delta record takes the second check, while records of other
    keys keep the one comparison they had. This loop runs once per distinct key, not per
    record."""
    marks: dict[bytes, int] = {}
    for key in latest:
        snapshot_prefix = deltas.get(key[:2])
        if snapshot_prefix is not None:
            marks[key] = latest.get(snapshot_prefix + key[2:], -1) + 1
    for key in marks:
        latest[key] = -1
    return marks


def _fields(result: CompactionResult) -> dict[str, float | int]:
    return {k: getattr(result, k) for k in result.__dataclass_fields__}


def _group(
    snapshot: list[SegmentInfo],
    outputs: list[list[bytes]],
    changed: list[bool],
    segment_bytes: int,
) -> list[tuple[int, int]]:
    """Runs of consecutive segments whose cleaned output fits one segment (index ranges);
    a lone segment that lost nothing is left alone."""
    groups: list[tuple[int, int]] = []
    start = 0
    size = 0
    for i, out in enumerate(outputs):
        n = sum(len(b) for b in out)
        if i > start and size + n > segment_bytes:
            groups.append((start, i - 1))
            start, size = i, 0
        size += n
    groups.append((start, len(outputs) - 1))
    return [(a, b) for a, b in groups if b > a or changed[a]]


def _end_offset(plog: PartitionLog, last_member: SegmentInfo) -> int:
    """The base offset of the segment after ``last_member``: the end of the swapped range."""
    for seg in plog.segments():
        if seg.base_offset > last_member.base_offset:
            return seg.base_offset
    raise RuntimeError("a closed segment must be followed by another segment")


def _swap(plog: PartitionLog, members: list[SegmentInfo], data: bytes, end: int) -> None:
    directory = plog.directory
    base = members[0].base_offset
    cleaned = directory / cleaned_name(base)
    fd = os.open(cleaned, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        written = 0
        while written < len(data):
            written += os.write(fd, view[written:])
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        cleaned.unlink(missing_ok=True)
        raise
    os.close(fd)
    swap = directory / swap_name(base, end)
    with plog.lock:
        os.replace(cleaned, swap)
        fsync_dir(directory)  # commit point: recovery will finish the swap
        for m in members[1:]:
            Path(m.path).unlink(missing_ok=True)
        target = directory / segment_name(base)
        os.replace(swap, target)
        fsync_dir(directory)
        plog.replace_segments(members, SegmentInfo(base, target, len(data)))
    plog.budget.release(sum(m.size for m in members) - len(data))
