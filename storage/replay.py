"""What a coordinator partition's load reads: the records replay needs, and only those.

Replaying a coordinator partition only needs, for each key, its latest record: an older record of
the same key is superseded by it, as Kafka's log cleaner assumes when it drops it. So the reader
picks the records replay needs from the raw bytes first, and decodes only those:

* every record goes into a dict by its key bytes, so a newer record of a key replaces the older
  one without either being decoded (a batch that ends before ``from_offset`` is skipped by its
  header alone);
* a record of a delta type (``storage.records.DELTA_TYPES``: a ShareUpdate) is kept unless a later
  record of its snapshot type with the same key fields exists (the rule of
  ``storage.compaction``);
* a record of a type in ``keep_every`` is always kept (the rebalance timeline wants every group
  record, not the latest per key);
* tombstones that are the latest of their key are kept (replay removes what they name), unless
  ``drop_tombstones_before`` says they are past ``log.cleaner.delete.retention.ms``.

The kept records keep their offsets and log order: what replay sees is the log as the cleaner
would leave it, which is what Kafka's coordinators load after a compaction anyway.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from storage.errors import CorruptLogError
from storage.framing import HEADER, HEADER_SIZE, RECORD, RECORD_SIZE
from storage.log import LogRecord, PartitionLog, RecoveryPoint
from storage.records.registry import DELTA_KEY_PREFIXES, decode_record

_TYPE = __import__("struct").Struct(">h")
_END = 1 << 63  # above every offset

DecodedRecord = tuple[int, int, Any, Any]
"""(offset, timestamp ms, key object, value object or None for a tombstone)."""


class LatestRecords:
    """Collects raw records in log order and keeps those replay needs (see the module)."""

    __slots__ = ("_deltas", "_every", "_kept", "_latest", "_special", "bytes", "count",
                 "recovery_point", "stopped_at")

    def __init__(self, keep_every: Collection[int] = (),
                 deltas: Mapping[bytes, bytes] = DELTA_KEY_PREFIXES) -> None:
        self._deltas = dict(deltas)
        self._every = frozenset(_TYPE.pack(t) for t in keep_every)
        # 2-byte type prefixes whose records are not simply superseded by the next of their key
        self._special = frozenset(self._deltas) | self._every
        self._latest: dict[bytes, LogRecord] = {}
        self._kept: list[LogRecord] = []  # records of the special types, all of them
        self.count = 0
        """How many records were offered."""
        self.bytes = 0
        """The size of the batches they were read from (:meth:`add_segment`)."""
        self.stopped_at: tuple[int, int] | None = None
        """(byte position, base offset) of the batch at or past ``to_offset`` that stopped
        :meth:`add_segment`."""
        self.recovery_point: RecoveryPoint | None = None
        """Where :func:`latest_records` stopped reading a log (given a ``to_offset``)."""

    def add(self, record: LogRecord) -> None:
        """Offer one record (offsets increasing)."""
        self.count += 1
        key = record[2]
        if key[:2] in self._special:
            self._kept.append(record)
        else:
            self._latest[key] = record

    def add_all(self, records: Iterable[LogRecord]) -> None:
        for record in records:
            self.add(record)

    def add_segment(self, partition: int, path: str, buf: bytes, from_offset: int = 0,
                    to_offset: int = _END) -> bool:
        """Offer the records of a segment's validated bytes with ``from_offset <= offset <
        to_offset``; False once a batch at or past ``to_offset`` was met (later segments need
        not be read)."""
        unpack_header = HEADER.unpack_from
        unpack_record = RECORD.unpack_from
        latest = self._latest
        special = self._special
        kept = self._kept
        pos = 0
        end = len(buf)
        n = 0
        while pos < end:
            length, _crc, _m, _a, _r, base, last_delta, ts, count = unpack_header(buf, pos)
            batch_end = pos + 4 + length
            if base + last_delta < from_offset:
                pos = batch_end
                continue
            if base >= to_offset:
                self.count += n
                self.stopped_at = (pos, base)
                return False
            whole = base >= from_offset and base + last_delta < to_offset
            self.bytes += 4 + length
            p = pos + HEADER_SIZE
            for _ in range(count):
                delta, klen, vlen = unpack_record(buf, p)
                p += RECORD_SIZE
                key = buf[p : p + klen]
                p += klen
                if vlen < 0:
                    record: LogRecord = (base + delta, ts, key, None)
                else:
                    record = (base + delta, ts, key, buf[p : p + vlen])
                    p += vlen
                if not whole and not from_offset <= base + delta < to_offset:
                    continue
                n += 1
                if key[:2] in special:
                    kept.append(record)
                else:
                    latest[key] = record
            if p != batch_end:
                raise CorruptLogError(partition, path, pos, "records overrun their batch")
            pos = batch_end
        self.count += n
        return True

    def result(self, drop_tombstones_before: int | None = None) -> list[LogRecord]:
        """The records replay needs, in offset order. ``drop_tombstones_before``: the latest
        record of a key that is a tombstone with a timestamp below it is dropped too (past
        ``log.cleaner.delete.retention.ms``, as the cleaner drops it)."""
        latest = self._latest
        out = list(latest.values())
        deltas = self._deltas
        every = self._every
        for record in self._kept:
            key = record[2]
            prefix = key[:2]
            snapshot_prefix = deltas.get(prefix)
            if snapshot_prefix is None or prefix in every:
                out.append(record)
                continue
            snapshot = latest.get(snapshot_prefix + key[2:])
            if snapshot is None or snapshot[0] < record[0]:
                out.append(record)
        if drop_tombstones_before is not None:
            out = [r for r in out if r[3] is not None or r[1] >= drop_tombstones_before]
        out.sort()
        return out


def latest_records(plog: PartitionLog, from_offset: int = 0, to_offset: int = _END, *,
                   keep_every: Collection[int] = (),
                   collector: LatestRecords | None = None) -> LatestRecords:
    """The records of ``plog`` in ``[from_offset, to_offset)`` offered to ``collector`` (a new
    one by default, keeping every record of the ``keep_every`` type ids)."""
    latest = collector if collector is not None else LatestRecords(keep_every)
    end: tuple[int, int] | None = None
    for seg, buf, start in plog.segment_buffers(from_offset):
        if not latest.add_segment(plog.partition, str(seg.path), buf, from_offset, to_offset):
            assert latest.stopped_at is not None
            position, offset = latest.stopped_at
            latest.recovery_point = RecoveryPoint(seg.base_offset, start + position, offset)
            return latest
        end = (seg.base_offset, start + len(buf))
    if end is not None and to_offset != _END:
        latest.recovery_point = RecoveryPoint(end[0], end[1], to_offset)
    return latest


def decode_records(records: Iterable[LogRecord]) -> list[DecodedRecord]:
    """Decode raw records: (offset, timestamp, key, value)."""
    decode = decode_record
    out: list[DecodedRecord] = []
    append = out.append
    for offset, ts, key_bytes, value_bytes in records:
        key, value = decode(key_bytes, value_bytes)
        append((offset, ts, key, value))
    return out


def replay_records(plog: PartitionLog, from_offset: int = 0, *,
                   keep_every: Collection[int] = ()) -> tuple[list[DecodedRecord], int]:
    """The decoded records a load of ``plog`` from ``from_offset`` replays, and how many records
    were read to pick them."""
    latest = latest_records(plog, from_offset, keep_every=keep_every)
    return decode_records(latest.result()), latest.count
