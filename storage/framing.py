"""Batch framing: how records sit in a segment file (see FORMAT.md).

A batch is ``HEADER`` followed by ``count`` records; its CRC32C covers every byte after the
CRC field, so a torn or altered batch is detected (and dropped) whole.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import crc32c

MAGIC = 1
# length(u32: bytes after this field) crc(u32) magic(u8) attributes(u8) reserved(u16)
# base_offset(i64) last_offset_delta(u32) timestamp_ms(i64) count(u32)
HEADER = struct.Struct(">IIBBHqIqI")
HEADER_SIZE = HEADER.size  # 36
CRC_START = 8  # the CRC covers buf[pos + 8 : pos + 4 + length]
# offset_delta(u32) key_length(u32) value_length(i32, -1 = tombstone)
RECORD = struct.Struct(">IIi")
RECORD_SIZE = RECORD.size  # 12
MIN_LENGTH = HEADER_SIZE - 4

Record = tuple[bytes, bytes | None]
"""A record to append: (key bytes, value bytes or None for a tombstone)."""


def crc_of(buf: bytes | bytearray | memoryview) -> int:
    value: int = crc32c.crc32c(buf)
    return value


def encode_batch(
    base_offset: int,
    timestamp_ms: int,
    records: Sequence[Record],
    offset_deltas: Sequence[int] | None = None,
) -> bytes:
    """Frame ``records`` as one batch. Offsets are ``base_offset + delta`` (default 0, 1, ...)."""
    if not records:
        raise ValueError("a batch needs at least one record")
    if offset_deltas is not None and len(offset_deltas) != len(records):
        raise ValueError("offset_deltas and records differ in length")
    out = bytearray(HEADER_SIZE)
    pack = RECORD.pack
    last_delta = 0
    for i, (key, value) in enumerate(records):
        delta = i if offset_deltas is None else offset_deltas[i]
        if delta < last_delta or (i and delta == last_delta):
            raise ValueError("offset deltas must increase")
        last_delta = delta
        if value is None:
            out += pack(delta, len(key), -1)
            out += key
        else:
            out += pack(delta, len(key), len(value))
            out += key
            out += value
    HEADER.pack_into(
        out, 0, len(out) - 4, 0, MAGIC, 0, 0, base_offset, last_delta, timestamp_ms, len(records)
    )
    struct.pack_into(">I", out, 4, crc_of(memoryview(out)[CRC_START:]))
    return bytes(out)


@dataclass(frozen=True, slots=True)
class BatchInfo:
    position: int  # byte position of the batch in its segment
    size: int  # total bytes of the batch, header included
    base_offset: int
    last_offset: int
    timestamp_ms: int
    count: int


def check_batch(buf: bytes, pos: int, end: int) -> BatchInfo | str:
    """Validate the batch at ``pos``: its :class:`BatchInfo`, or why it is not a valid batch."""
    if end - pos < HEADER_SIZE:
        return f"truncated batch header ({end - pos} bytes)"
    length, crc, magic, _attrs, _res, base, last_delta, ts, count = HEADER.unpack_from(buf, pos)
    if length < MIN_LENGTH:
        return f"bad batch length {length}"
    if pos + 4 + length > end:
        return f"truncated batch (needs {4 + length} bytes, {end - pos} left)"
    if magic != MAGIC:
        return f"bad magic {magic}"
    if crc_of(memoryview(buf)[pos + CRC_START : pos + 4 + length]) != crc:
        return "CRC32C mismatch"
    if count == 0:
        return "empty batch"
    return BatchInfo(pos, 4 + length, base, base + last_delta, ts, count)


def find_valid_batch(buf: bytes, start: int, end: int) -> int | None:
    """The position of the first valid batch at or after ``start``, if any (slow path)."""
    mv = memoryview(buf)
    for pos in range(start, end - HEADER_SIZE + 1):
        if buf[pos + 8] != MAGIC:
            continue
        length = int.from_bytes(mv[pos : pos + 4], "big")
        if length < MIN_LENGTH or pos + 4 + length > end:
            continue
        if isinstance(check_batch(buf, pos, end), BatchInfo):
            return pos
    return None


def iter_batch_records(buf: bytes, pos: int) -> Iterator[tuple[int, int, bytes, bytes | None]]:
    """Records of the (already validated) batch at ``pos``: (offset, timestamp, key, value)."""
    length, _crc, _m, _a, _r, base, _ld, ts, count = HEADER.unpack_from(buf, pos)
    end = pos + 4 + length
    p = pos + HEADER_SIZE
    unpack = RECORD.unpack_from
    for _ in range(count):
        delta, klen, vlen = unpack(buf, p)
        p += RECORD_SIZE
        key = buf[p : p + klen]
        p += klen
        if vlen < 0:
            yield base + delta, ts, key, None
        else:
            yield base + delta, ts, key, buf[p : p + vlen]
            p += vlen
    if p != end:
        raise ValueError(f"batch at {pos}: records end at {p}, batch at {end}")
