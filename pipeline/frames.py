"""A segment's records as columns, found with numpy instead of a Python loop per record.

The batches are walked and CRC32C-checked in one tight loop (one step per batch); their headers
are then read as a numpy structured array, and every record's offset delta, key length and value
length are read for all batches at once, one record position at a time (step ``j`` reads the
``j``-th record of every batch that has one). What comes out is, per record, its offset,
timestamp, type id, and where its key and value bytes are in the segment: nothing is decoded.

The checks are :func:`storage.segment.scan`'s: a segment that fails any of them is handed to
``scan`` itself, so a torn tail of a partition's last segment is skipped and any other damage
raises :class:`storage.errors.CorruptLogError`, exactly as ``log dump`` does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import crc32c
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from numpy.lib.stride_tricks import sliding_window_view

from storage.errors import CorruptLogError
from storage.framing import CRC_START, HEADER_SIZE, MAGIC, MIN_LENGTH, RECORD, RECORD_SIZE
from storage.segment import scan

Ints = npt.NDArray[np.int64]
Bytes = npt.NDArray[np.uint8]

HEADER_DTYPE = np.dtype([
    ("length", ">u4"), ("crc", ">u4"), ("magic", "u1"), ("attributes", "u1"),
    ("reserved", ">u2"), ("base_offset", ">i8"), ("last_offset_delta", ">u4"),
    ("timestamp", ">i8"), ("count", ">u4"),
])
RECORD_DTYPE = np.dtype([("offset_delta", ">u4"), ("key_length", ">u4"),
                         ("value_length", ">i4")])
assert HEADER_DTYPE.itemsize == HEADER_SIZE and RECORD_DTYPE.itemsize == RECORD_SIZE
_LENGTH_CRC = struct.Struct(">II")
_FEW = 8
"""Batches still open at a record position below which the rest is read in Python (a batch of
thousands of records would otherwise cost a numpy step per record)."""


@dataclass(frozen=True, slots=True)
class Batches:
    """The validated batches of a segment (or a run of them), as columns."""

    position: Ints  # byte position of each batch
    end: Ints  # byte position after it
    base_offset: Ints
    timestamp: Ints
    count: Ints

    def __len__(self) -> int:
        return len(self.position)

    def slice(self, start: int, stop: int) -> Batches:
        return Batches(self.position[start:stop], self.end[start:stop],
                       self.base_offset[start:stop], self.timestamp[start:stop],
                       self.count[start:stop])


@dataclass(frozen=True, slots=True)
class Frames:
    """Records of one segment as columns (one entry per record, in log order)."""

    data: Bytes  # the segment's bytes
    offset: Ints
    timestamp: Ints
    type_id: Ints  # the key's first two bytes; -1 for a key shorter than that
    key_start: Ints
    key_length: Ints
    value_start: Ints
    value_length: Ints  # -1: a tombstone

    def __len__(self) -> int:
        return len(self.offset)

    @property
    def tombstone(self) -> npt.NDArray[np.bool_]:
        return self.value_length < 0

    def key(self, i: int) -> bytes:
        start = int(self.key_start[i])
        return self.data[start:start + int(self.key_length[i])].tobytes()

    def value(self, i: int) -> bytes | None:
        length = int(self.value_length[i])
        if length < 0:
            return None
        start = int(self.value_start[i])
        return self.data[start:start + length].tobytes()

    def stored(self, i: int) -> tuple[int, int, bytes, bytes | None]:
        """Record ``i`` as ``storage`` yields it: (offset, timestamp, key, value)."""
        return int(self.offset[i]), int(self.timestamp[i]), self.key(i), self.value(i)


def _at(data: Bytes, positions: Ints, width: int) -> Bytes:
    """The ``width`` bytes at each position, one row each (a copy)."""
    if not len(positions):
        return np.zeros((0, width), dtype=np.uint8)
    return sliding_window_view(data, width)[positions]


def read_u64(data: Bytes, positions: Ints) -> Ints:
    """The big-endian int64 at each position."""
    return _at(data, positions, 8).view(">i8")[:, 0].astype(np.int64)


def read_i32(data: Bytes, positions: Ints) -> Ints:
    """The big-endian int32 at each position."""
    return _at(data, positions, 4).view(">i4")[:, 0].astype(np.int64)


def read_u16(data: Bytes, positions: Ints) -> Ints:
    return (data[positions].astype(np.int64) << 8) | data[positions + 1]


def distinct_keys(frames: Frames, index: Ints) -> tuple[Ints, list[bytes]]:
    """The key bytes of the records at ``index``, each distinct one once, and which of them
    each record has (a group writes the same few keys over and over)."""
    encoded = cast("pa.DictionaryArray", pc.dictionary_encode(gather(
        frames.data, frames.key_start[index], frames.key_length[index])))
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, cast("list[bytes]", encoded.dictionary.to_pylist())


def gather_bytes(data: Bytes, starts: Ints, lengths: Ints) -> tuple[Ints, Bytes]:
    """The byte ranges ``[start, start + length)`` of ``data`` end to end, and where each
    begins in them (one more entry than ranges: the last is the total)."""
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(total, dtype=np.int64)
    return offsets, data[index]


def gather(data: Bytes, starts: Ints, lengths: Ints) -> pa.Array:
    """The byte ranges ``[start, start + length)`` of ``data`` as an Arrow binary array."""
    offsets, values = gather_bytes(data, starts, lengths)
    total = int(offsets[-1])
    kind = pa.binary() if total < 2**31 else pa.large_binary()
    width = np.int32 if total < 2**31 else np.int64
    array = pa.Array.from_buffers(kind, len(starts), [
        None, pa.py_buffer(offsets.astype(width).data), pa.py_buffer(values.data)])
    return array


def segment_batches(path: str, partition: int, base_offset: int, last: bool
                    ) -> tuple[Bytes, Batches]:
    """A segment file's bytes and its valid batches. A bad batch in the partition's last
    segment with nothing valid after it is a torn tail (skipped); other damage raises
    :class:`CorruptLogError`."""
    buf = Path(path).read_bytes()
    positions = _walk(buf)
    if positions is not None:
        batches = _headers(np.frombuffer(buf, dtype=np.uint8), positions, base_offset)
        if batches is not None:
            return np.frombuffer(buf, dtype=np.uint8), batches
    result = scan(buf, base_offset)  # the slow path says what is wrong, as log dump does
    if result.error is not None:
        if not last or result.more_valid_data:
            raise CorruptLogError(partition, path, result.valid_end, result.error)
        buf = buf[: result.valid_end]
    data = np.frombuffer(buf, dtype=np.uint8)
    batches = _headers(data, np.array([b.position for b in result.batches], dtype=np.int64),
                       base_offset)
    assert batches is not None  # scan accepted every one of them
    return data, batches


def _walk(buf: bytes) -> Ints | None:
    """Positions of the batches if each has a sane length and a matching CRC32C and they end
    exactly at the end of ``buf``; None otherwise."""
    view = memoryview(buf)
    unpack = _LENGTH_CRC.unpack_from
    crc = crc32c.crc32c
    end = len(buf)
    pos = 0
    positions: list[int] = []
    append = positions.append
    while end - pos >= HEADER_SIZE:
        length, expected = unpack(buf, pos)
        stop = pos + 4 + length
        if length < MIN_LENGTH or stop > end or crc(view[pos + CRC_START:stop]) != expected:
            return None
        append(pos)
        pos = stop
    if pos != end:
        return None
    return np.array(positions, dtype=np.int64)


def _headers(data: Bytes, positions: Ints, first_offset: int) -> Batches | None:
    """The batches' headers, if every one has magic 1, at least one record, and offsets above
    the previous batch's (and at or above ``first_offset``)."""
    headers = _at(data, positions, HEADER_SIZE).view(HEADER_DTYPE)[:, 0]
    base = headers["base_offset"].astype(np.int64)
    last = base + headers["last_offset_delta"].astype(np.int64)
    count = headers["count"].astype(np.int64)
    expected = np.concatenate(([first_offset], last[:-1] + 1)).astype(np.int64)
    if (np.any(headers["magic"] != MAGIC) or np.any(count == 0)
            or np.any(base < expected[: len(base)])):
        return None
    end = positions + 4 + headers["length"].astype(np.int64)
    return Batches(positions, end, base, headers["timestamp"].astype(np.int64), count)


def frames(data: Bytes, batches: Batches, partition: int, path: str) -> Frames:
    """Every record of ``batches`` (validated batches of ``data``), in log order."""
    counts = batches.count
    n = int(counts.sum())
    first = np.cumsum(counts) - counts  # index of each batch's first record
    position = np.empty(n, dtype=np.int64)
    delta = np.empty(n, dtype=np.int64)
    key_length = np.empty(n, dtype=np.int64)
    value_length = np.empty(n, dtype=np.int64)
    order = np.argsort(-counts, kind="stable")  # batches with the most records first
    remaining = counts[order]
    ascending = remaining[::-1]
    cursor = batches.position[order] + HEADER_SIZE
    stop = batches.end[order]
    first_of = first[order]
    j = 0
    while True:
        k = len(ascending) - int(np.searchsorted(ascending, j, side="right"))
        if k == 0:
            break
        if k <= _FEW and remaining[0] - j > _FEW:
            for b in range(k):
                cursor[b] = _read_rest(data, int(cursor[b]), int(stop[b]), j,
                                       int(remaining[b]), int(first_of[b]), position, delta,
                                       key_length, value_length, partition, path)
            break
        at = cursor[:k]
        if np.any(at + RECORD_SIZE > stop[:k]):
            raise CorruptLogError(partition, path, int(at[np.argmax(at + RECORD_SIZE > stop[:k])]),
                                  "records overrun their batch")
        fields = _at(data, at, RECORD_SIZE).view(RECORD_DTYPE)[:, 0]
        index = first_of[:k] + j
        position[index] = at
        delta[index] = fields["offset_delta"]
        klen = fields["key_length"].astype(np.int64)
        vlen = fields["value_length"].astype(np.int64)
        key_length[index] = klen
        value_length[index] = np.where(vlen < 0, -1, vlen)
        cursor[:k] = at + RECORD_SIZE + klen + np.maximum(vlen, 0)
        j += 1
    if np.any(cursor != stop):
        bad = int(np.argmax(cursor != stop))
        raise CorruptLogError(partition, path, int(batches.position[order][bad]),
                              "records overrun their batch")
    key_start = position + RECORD_SIZE
    type_id = np.full(n, -1, dtype=np.int64)
    has_type = key_length >= 2
    type_id[has_type] = read_u16(data, key_start[has_type])
    return Frames(data, np.repeat(batches.base_offset, counts) + delta,
                  np.repeat(batches.timestamp, counts), type_id, key_start, key_length,
                  key_start + key_length, value_length)


def _read_rest(data: Bytes, pos: int, stop: int, j: int, count: int, first: int,
               position: Ints, delta: Ints, key_length: Ints, value_length: Ints,
               partition: int, path: str) -> int:
    """Records ``j..count-1`` of one batch whose ``j``-th record is at ``pos``, in Python."""
    buf = data.data
    unpack = RECORD.unpack_from
    for i in range(first + j, first + count):
        if pos + RECORD_SIZE > stop:
            raise CorruptLogError(partition, path, pos, "records overrun their batch")
        d, klen, vlen = unpack(buf, pos)
        position[i] = pos
        delta[i] = d
        key_length[i] = klen
        value_length[i] = -1 if vlen < 0 else vlen
        pos += RECORD_SIZE + klen + max(vlen, 0)
    return pos


def segment_frames(path: str, partition: int, base_offset: int, last: bool,
                   max_records: int) -> Iterator[Frames]:
    """The records of a segment, ``max_records`` or so at a time (whole batches)."""
    data, batches = segment_batches(path, partition, base_offset, last)
    if not len(batches):
        return
    ends = np.cumsum(batches.count)
    start = 0
    while start < len(batches):
        before = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + max_records, side="right")))
        yield frames(data, batches.slice(start, stop), partition, path)
        start = stop
