"""Kafka record batches (magic v2) as producers send them: header fields, validation, and the
in-place rewrites the leader makes on append.

Layout (``DefaultRecordBatch``): baseOffset i64, batchLength i32, partitionLeaderEpoch i32,
magic i8, crc u32, attributes i16, lastOffsetDelta i32, baseTimestamp i64, maxTimestamp i64,
producerId i64, producerEpoch i16, baseSequence i32, recordsCount i32, then the records. The
CRC32C covers the bytes from ``attributes`` to the end, so the leader may set the base offset and
the leader epoch without touching it; setting the log append time rewrites ``attributes`` and
``maxTimestamp`` and therefore recomputes the CRC, as Kafka's ``setMaxTimestamp`` does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c

from protocol import ErrorCode

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
MIN_RECORD_OVERHEAD = 14  # Kafka's LegacyRecord.RECORD_OVERHEAD_V0: the smallest batchLength
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
LEADER_EPOCH_OFFSET = 12
MAGIC_V2 = 2

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08  # set: LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
ZSTD = 4
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


class BatchError(Exception):
    """A batch the log refuses, with the error code Kafka answers with."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    length: int  # batchLength: bytes after the length field
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        """The sequence of the batch's last record (sequences wrap at 2^31 - 1 to 0)."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (2**31)


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def compute_crc(batch: bytes | bytearray | memoryview) -> int:
    value: int = crc32c.crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:])
    return value


def split_batches(records: bytes) -> list[tuple[int, int]]:
    """(position, size) of each whole batch in a produce request's records.

    Raises ``BatchError``: CORRUPT_MESSAGE for a length below the minimum or bytes that end
    inside a batch (truncated), INVALID_RECORD for a magic other than 2.
    """
    out: list[tuple[int, int]] = []
    pos, end = 0, len(records)
    while pos < end:
        if end - pos < LOG_OVERHEAD:
            raise BatchError(ErrorCode.corrupt_message,
                             f"Truncated record batch: {end - pos} bytes left at {pos}")
        (length,) = _I32.unpack_from(records, pos + 8)
        if length < MIN_RECORD_OVERHEAD:
            raise BatchError(ErrorCode.corrupt_message,
                             f"Record size {length} is less than the minimum record overhead "
                             f"({MIN_RECORD_OVERHEAD})")
        size = LOG_OVERHEAD + length
        if pos + size > end:
            raise BatchError(ErrorCode.corrupt_message,
                             f"Truncated record batch: needs {size} bytes, {end - pos} left")
        magic = records[pos + MAGIC_OFFSET]
        if magic != MAGIC_V2:
            raise BatchError(ErrorCode.invalid_record,
                             "Produce requests with version 3 and above are only allowed to "
                             "contain record batches with magic version 2")
        if size < HEADER_SIZE:
            raise BatchError(ErrorCode.corrupt_message,
                             f"Record batch size {size} is smaller than its header")
        out.append((pos, size))
        pos += size
    return out


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """A zigzag varint (or varlong) at ``pos``: (value, position after it)."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(buf):
            raise IndexError("varint runs past the end")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")
    return (raw >> 1) ^ -(raw & 1), pos


def validate(batch: bytes | bytearray | memoryview) -> BatchHeader:
    """Kafka's checks on a client's batch: CRC, offset range vs count, records vs count.

    The CRC (``ensureValid``) fails with CORRUPT_MESSAGE. A record count that does not match the
    records in an uncompressed batch also fails with CORRUPT_MESSAGE (Kafka: INVALID_RECORD,
    "Incorrect declared batch size"); compressed batches are stored as they are, so their
    records are not counted. The ``LogValidator.validateBatch`` checks fail with INVALID_RECORD.
    """
    header = read_header(batch)
    if compute_crc(batch) != header.crc:
        raise BatchError(ErrorCode.corrupt_message,
                         f"Record is corrupt (stored crc = {header.crc}, computed crc = "
                         f"{compute_crc(batch)})")
    if header.last_offset_delta < 0:
        raise BatchError(ErrorCode.invalid_record,
                         f"Batch has an invalid offset range: lastOffsetDelta "
                         f"{header.last_offset_delta}")
    if header.count <= 0:
        raise BatchError(ErrorCode.invalid_record,
                         f"Invalid reported count for record batch: {header.count}")
    if header.last_offset_delta + 1 != header.count:
        raise BatchError(ErrorCode.invalid_record,
                         f"Inconsistent batch offset range [0, {header.last_offset_delta}] and "
                         f"count of records {header.count}")
    if header.is_control:
        raise BatchError(ErrorCode.invalid_record,
                         "Clients are not allowed to write control records")
    if header.has_producer_id and header.base_sequence < 0:
        raise BatchError(ErrorCode.invalid_record,
                         f"Invalid sequence number {header.base_sequence} in record batch with "
                         f"producerId {header.producer_id}")
    if header.compression == 0:
        _check_record_count(batch, header)
    elif header.compression not in CODECS:
        raise BatchError(ErrorCode.corrupt_message,
                         f"Unknown compression type id {header.compression}")
    return header


def _check_record_count(batch: bytes | bytearray | memoryview, header: BatchHeader) -> None:
    end = len(batch)
    pos = HEADER_SIZE
    try:
        for _ in range(header.count):
            length, pos = read_varint(batch, pos)
            if length < 0 or pos + length > end:
                raise IndexError
            pos += length
    except (IndexError, ValueError):
        raise BatchError(ErrorCode.corrupt_message,
                         "Found invalid record structure: the batch holds fewer records than "
                         f"its count ({header.count})") from None
    if pos != end:
        raise BatchError(ErrorCode.corrupt_message,
                         "Incorrect declared batch size, records still remaining in the batch")


def assign(batch: bytes | bytearray | memoryview, base_offset: int, leader_epoch: int,
           log_append_time_ms: int | None) -> bytes:
    """The batch as stored: its base offset and leader epoch set and, for a LogAppendTime topic,
    the timestamp type bit and max timestamp set to the append time (CRC recomputed)."""
    out = bytearray(batch)
    _I64.pack_into(out, 0, base_offset)
    _I32.pack_into(out, LEADER_EPOCH_OFFSET, leader_epoch)
    if log_append_time_ms is not None:
        (attributes,) = _I16.unpack_from(out, ATTRIBUTES_OFFSET)
        _I16.pack_into(out, ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_BIT)
        _I64.pack_into(out, MAX_TIMESTAMP_OFFSET, log_append_time_ms)
        _U32.pack_into(out, CRC_OFFSET, compute_crc(out))
    return bytes(out)


def record_timestamps(batch: bytes | bytearray | memoryview,
                      header: BatchHeader) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of each record of an uncompressed batch. For a LogAppendTime batch
    every record has the batch's max timestamp."""
    pos = HEADER_SIZE
    for _ in range(header.count):
        length, pos = read_varint(batch, pos)
        body = pos
        pos += length
        p = body + 1  # attributes (int8)
        ts_delta, p = read_varint(batch, p)
        offset_delta, p = read_varint(batch, p)
        timestamp = (header.max_timestamp if header.is_log_append_time
                     else header.base_timestamp + ts_delta)
        yield header.base_offset + offset_delta, timestamp
