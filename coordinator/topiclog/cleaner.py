"""Log compaction of data topics (``cleanup.policy`` with ``compact``), as Kafka's log cleaner.

Which logs: a partition is cleaned when the dirty part of its cleanable segments (those from the
offset its last cleaning reached, kept in ``cleaner-offset-checkpoint`` beside its segments) is
at least ``min.cleanable.dirty.ratio`` of their bytes, or when a tombstone or marker its last
cleaning kept has passed ``delete.retention.ms`` (and once after a start, since that is not
remembered). The cleanable segments are the closed ones (never the active segment) wholly below
the last stable offset: an open transaction's records are not cleaned.

What is kept: of each key, the record with the largest offset (records of aborted transactions
do not count); a tombstone (a null value) only until ``delete.retention.ms`` after its timestamp;
records without a key; nothing of an aborted transaction; a commit or abort marker while a batch
of its transaction remains, else until ``delete.retention.ms`` after it. A batch keeps its base
and last offset (a consumer sees the gaps Kafka leaves), producer fields and sequences; a
producer's last batch stays, emptied if need be, so its sequence state survives a restart.
Consecutive segments are cleaned into one up to ``segment.bytes``, named by the first one's base
offset, so the log start offset does not move.

Crash safety: the cleaned segments are written as ``<base>.log.cleaned`` and fsynced in a worker
thread; then, on the event loop, each is renamed ``<base>.log.<end>.swap`` (the commit point, its
directory entry fsynced) and the segments it replaces are removed
(``storage.segment.finish_plan``, which opening a log also runs: a crash leaves either the old
segments or the cleaned one). Groups are committed oldest first, so a record is dropped only
while the newer record of its key is on disk. If retention or DeleteRecords removed a segment
meanwhile, the pass's output is discarded.

The latest offset of each key is taken from the dirty segments only (the clean ones hold each
key once already, so a key the dirty ones do not have is kept), in memory, up to
``log.cleaner.dedupe.buffer.size`` (an estimate of the keys' bytes): past it, a pass cleans the
log only up to the last dirty segment whose keys fit, and the next pass goes on from there, as
Kafka's cleaner does.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.observability.logs import get_logger
from storage.segment import DirectoryPlan, cleaned_name, finish_plan, fsync_dir, swap_name

from .batch import read_header
from .partition import LogConfig, PartitionLog, segment_name
from .records import Record, RecordsError, rebuild, records_of
from .segment import Segment

log = get_logger("coordinator.topiclog")

DEDUPE_BUFFER_BYTES = 134217728  # log.cleaner.dedupe.buffer.size's default
KEY_OVERHEAD_BYTES = 100
"""What a key costs the offset map beyond its bytes (the bytes object, the offset, the slot)."""


@dataclass(frozen=True, slots=True)
class CleanStats:
    segments_before: int
    segments_after: int
    bytes_before: int
    bytes_after: int
    records_removed: int
    tombstones_removed: int
    markers_removed: int


@dataclass(slots=True)
class _Work:
    """What a pass needs from the log, taken on the event loop."""

    directory: Path
    first_dirty: int  # where the last cleaning ended: segments from here are dirty
    segments: list[Segment]  # the cleanable segments
    ends: list[int]  # each one's end: the next segment's base offset
    aborted: dict[int, list[tuple[int, int]]]  # producer id -> (first offset, marker offset)
    producer_last: dict[int, int]  # producer id -> last offset of its last batch


@dataclass(slots=True)
class _Output:
    sources: list[Segment]
    cleaned: Path
    segment: Segment
    end: int


@dataclass(slots=True)
class _Counts:
    records: int = 0
    tombstones: int = 0
    markers: int = 0
    oldest_kept_ms: int | None = None  # the oldest timestamp of a tombstone or marker kept
    txn_has_data: dict[int, bool] = field(default_factory=dict)

    def keep(self, timestamp: int) -> None:
        if self.oldest_kept_ms is None or timestamp < self.oldest_kept_ms:
            self.oldest_kept_ms = timestamp


def cleanable_segments(plog: PartitionLog) -> list[Segment]:
    """The closed segments wholly below the last stable offset, oldest first."""
    lso = plog.last_stable_offset
    out: list[Segment] = []
    for segment, following in zip(plog.segments, plog.segments[1:], strict=False):
        if following.base_offset > lso:
            break
        out.append(segment)
    return out


def needs_cleaning(plog: PartitionLog, config: LogConfig, now_ms: int) -> bool:
    if not config.compact or plog.closed:
        return False
    segments = cleanable_segments(plog)
    if not segments:
        return False
    kept = plog.oldest_kept_tombstone_ms
    if kept is not None and now_ms - kept > config.delete_retention_ms:
        return True
    total = sum(s.size for s in segments)
    dirty = sum(s.size for s in segments if s.base_offset >= plog.cleaner_checkpoint)
    return dirty > 0 and dirty / total >= config.min_cleanable_dirty_ratio


async def clean(plog: PartitionLog, config: LogConfig, now_ms: int,
                dedupe_buffer_bytes: int = DEDUPE_BUFFER_BYTES) -> CleanStats | None:
    """One cleaning of ``plog`` if it needs one; None if not (or its output was discarded)."""
    if not needs_cleaning(plog, config, now_ms):
        return None
    work = _take(plog)
    outputs, counts = await asyncio.to_thread(_write_cleaned, work, config, now_ms,
                                              dedupe_buffer_bytes)
    if not _install(plog, work, outputs):
        return None
    plog.cleaned_upto(outputs[-1].end, counts.oldest_kept_ms)
    sources = [s for o in outputs for s in o.sources]
    stats = CleanStats(len(sources), len(outputs), sum(s.size for s in sources),
                       sum(o.segment.size for o in outputs), counts.records,
                       counts.tombstones, counts.markers)
    log.info("topic log cleaned", topic=plog.topic, partition=plog.partition,
             segments_before=stats.segments_before, segments_after=stats.segments_after,
             bytes_before=stats.bytes_before, bytes_after=stats.bytes_after,
             records_removed=stats.records_removed,
             tombstones_removed=stats.tombstones_removed, markers_removed=stats.markers_removed)
    return stats


def _take(plog: PartitionLog) -> _Work:
    segments = cleanable_segments(plog)
    ends = [s.base_offset for s in plog.segments[1:len(segments) + 1]]
    aborted: dict[int, list[tuple[int, int]]] = {}
    for txn in plog.transactions.aborted_between(plog.segments[0].base_offset, ends[-1]):
        aborted.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    return _Work(plog.directory, plog.cleaner_checkpoint, segments, ends, aborted,
                 plog.producers.last_offsets())


# ---------------------------------------------------------------------- the worker thread
def _batches(segment: Segment) -> list[bytes]:
    return [segment.read(segment.positions[i], segment.batch_end(i) - segment.positions[i])
            for i in range(len(segment.positions))]


def _is_aborted(work: _Work, producer_id: int, offset: int) -> bool:
    return any(first <= offset <= last for first, last in work.aborted.get(producer_id, ()))


def _latest_offsets(work: _Work, max_bytes: int) -> tuple[dict[bytes, int], int]:
    """Each key's largest offset in the dirty segments (aborted and control batches, and
    batches that cannot be read, left out), and how many of the cleanable segments the pass
    cleans: all, unless the keys outgrow ``max_bytes`` before the last dirty one."""
    latest: dict[bytes, int] = {}
    size = 0
    for i, segment in enumerate(work.segments):
        if segment.base_offset < work.first_dirty:
            continue
        if size > max_bytes:
            return latest, i
        for data in _batches(segment):
            header = read_header(data)
            if header.is_control or (header.is_transactional and _is_aborted(
                    work, header.producer_id, header.base_offset)):
                continue
            try:
                records = records_of(data, header)
            except RecordsError:
                continue
            for record in records:
                if record.key is not None:
                    if record.key not in latest:
                        size += len(record.key) + KEY_OVERHEAD_BYTES
                    latest[record.key] = record.offset
    return latest, len(work.segments)


def _groups(work: _Work, count: int, segment_bytes: int) -> list[list[int]]:
    """Indexes of consecutive cleanable segments cleaned into one, each group's sources at most
    ``segment.bytes`` together (a larger segment is a group of its own)."""
    groups: list[list[int]] = []
    size = 0
    for i, segment in enumerate(work.segments[:count]):
        if groups and size + segment.size <= segment_bytes:
            groups[-1].append(i)
            size += segment.size
        else:
            groups.append([i])
            size = segment.size
    return groups


def _write_cleaned(work: _Work, config: LogConfig, now_ms: int,
                   dedupe_buffer_bytes: int = 0) -> tuple[list[_Output], _Counts]:
    latest, count = _latest_offsets(work, dedupe_buffer_bytes or DEDUPE_BUFFER_BYTES)
    counts = _Counts()
    outputs: list[_Output] = []
    try:
        for group in _groups(work, count, config.segment_bytes):
            sources = [work.segments[i] for i in group]
            outputs.append(_clean_group(work, sources, work.ends[group[-1]], latest, config,
                                        now_ms, counts))
    except BaseException:
        for output in outputs:
            output.cleaned.unlink(missing_ok=True)
        raise
    return outputs, counts


def _clean_group(work: _Work, sources: list[Segment], end: int, latest: dict[bytes, int],
                 config: LogConfig, now_ms: int, counts: _Counts) -> _Output:
    base = sources[0].base_offset
    cleaned = work.directory / cleaned_name(base)
    segment = Segment(base, work.directory / segment_name(base), exists=True)
    position = 0
    try:
        with open(cleaned, "wb") as out:
            for source in sources:
                for data in _batches(source):
                    kept = _retained(work, data, latest, config, now_ms, counts)
                    if kept is None:
                        continue
                    header = read_header(kept)
                    out.write(kept)
                    segment.index(position, header.last_offset, header.max_timestamp)
                    position += len(kept)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        cleaned.unlink(missing_ok=True)
        raise
    segment.file.size = position
    return _Output(sources, cleaned, segment, end)


def _retained(work: _Work, data: bytes, latest: dict[bytes, int], config: LogConfig,
              now_ms: int, counts: _Counts) -> bytes | None:
    """What the cleaned segment holds of one batch: the batch, a rebuilt one, or nothing."""
    header = read_header(data)
    retention = config.delete_retention_ms
    if header.is_control:
        if counts.txn_has_data.pop(header.producer_id, False):
            return data
        if now_ms - header.max_timestamp <= retention:
            counts.keep(header.max_timestamp)
            return data
        counts.markers += 1
        return None
    aborted = header.is_transactional and _is_aborted(work, header.producer_id,
                                                      header.base_offset)
    try:
        records = records_of(data, header)
    except RecordsError:
        records = None
    out: bytes | None
    if records is None:
        out = data  # unreadable: kept whole
    else:
        kept: list[Record] = []
        for record in records:
            if aborted or (record.key is not None
                           and latest.get(record.key, record.offset) > record.offset):
                continue
            if record.is_tombstone:
                if now_ms - record.timestamp > retention:
                    counts.tombstones += 1
                    continue
                counts.keep(record.timestamp)
            kept.append(record)
        counts.records += len(records) - len(kept)
        if len(kept) == len(records):
            out = data
        elif kept or (header.has_producer_id
                      and work.producer_last.get(header.producer_id) == header.last_offset):
            out = rebuild(header, kept)
        else:
            out = None
    if header.is_transactional:
        has_data = counts.txn_has_data.get(header.producer_id, False)
        counts.txn_has_data[header.producer_id] = has_data or out is not None
    return out


# ---------------------------------------------------------------------- the event loop
def _install(plog: PartitionLog, work: _Work, outputs: list[_Output]) -> bool:
    """Swap the cleaned segments in, oldest first; False (the output discarded) if the log's
    first segments changed meanwhile."""
    count = len(work.segments)
    current = plog.segments[:count]
    if plog.closed or len(current) != count or any(
            a is not b for a, b in zip(current, work.segments, strict=True)):
        for output in outputs:
            output.cleaned.unlink(missing_ok=True)
        return False
    for i, output in enumerate(outputs):
        base = output.segment.base_offset
        swap = work.directory / swap_name(base, output.end)
        os.replace(output.cleaned, swap)
        fsync_dir(work.directory)  # committed: opening the log completes the swap
        for source in output.sources:
            source.close()
        finish_plan(work.directory, DirectoryPlan({}, [(base, output.end, swap)]))
        plog.segments[i:i + len(output.sources)] = [output.segment]
    return True
