"""The records inside a stored record batch (magic v2), read for the log cleaner, and batches
rebuilt from a subset of them.

A record is ``length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
keyLength varint, key, valueLength varint, value, headers``; a null key or value has length -1.
A compressed batch's records are decompressed first (Kafka's codec ids); a rebuilt batch is
compressed with the original codec. A rebuilt batch keeps the original's base offset, last
offset delta, producer fields, base sequence and timestamps, as Kafka's cleaner keeps them
(``overrideLastOffset``): a consumer sees the gaps, a producer's sequence state survives.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import cramjam
import lz4.frame
import zstandard

from coordinator.telemetry.compression import CompressionError, decompress

from .batch import (
    CONTROL_BIT,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    compute_crc,
    read_varint,
)

MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024
"""A stored batch whose records decompress to more than this is kept whole by the cleaner."""

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    is_tombstone: bool  # a null value
    raw: bytes  # the record as stored, its length prefix included


class RecordsError(Exception):
    """A batch's records cannot be read (corrupt, or compressed beyond the bound)."""


def records_of(batch: bytes, header: BatchHeader) -> list[Record]:
    """Every record of a stored batch; ``RecordsError`` if they cannot be read."""
    body = batch[HEADER_SIZE:]
    if header.compression:
        try:
            body = decompress(header.compression, body, MAX_DECOMPRESSED_BYTES)
        except CompressionError as exc:
            raise RecordsError(str(exc)) from None
    try:
        return list(_parse(body, header))
    except (IndexError, ValueError) as exc:
        raise RecordsError(f"unreadable records: {exc}") from None


def _parse(body: bytes, header: BatchHeader) -> Iterator[Record]:
    pos = 0
    for _ in range(header.count):
        start = pos
        length, pos = read_varint(body, pos)
        end = pos + length
        if length < 0 or end > len(body):
            raise IndexError("record runs past the batch")
        p = pos + 1  # attributes
        ts_delta, p = read_varint(body, p)
        offset_delta, p = read_varint(body, p)
        key_length, p = read_varint(body, p)
        key = None if key_length < 0 else body[p:p + key_length]
        p += max(0, key_length)
        value_length, p = read_varint(body, p)
        timestamp = (header.max_timestamp if header.is_log_append_time
                     else header.base_timestamp + ts_delta)
        yield Record(header.base_offset + offset_delta, timestamp, key, value_length < 0,
                     body[start:end])
        pos = end


def compress(codec: int, data: bytes) -> bytes:
    if codec == GZIP:
        out = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
        return out.compress(data) + out.flush()
    if codec == SNAPPY:  # xerial's framing, as Kafka's Java producer writes it
        blocks = [_XERIAL_HEADER]
        for i in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[i:i + _XERIAL_BLOCK]))
            blocks.append(struct.pack(">i", len(block)) + block)
        return b"".join(blocks)
    if codec == LZ4:
        return bytes(lz4.frame.compress(data))
    if codec == ZSTD:
        return bytes(zstandard.ZstdCompressor().compress(data))
    return data


def rebuild(header: BatchHeader, kept: list[Record]) -> bytes:
    """The batch with only ``kept`` of its records (an empty batch if none, uncompressed, as
    Kafka's ``writeEmptyHeader``)."""
    attributes = header.attributes
    body = b"".join(r.raw for r in kept)
    if not kept:
        attributes &= TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT
    elif header.compression:
        body = compress(header.compression, body)
    base_timestamp = header.base_timestamp if kept else header.max_timestamp
    out = bytearray(HEADER.pack(header.base_offset, HEADER_SIZE - LOG_OVERHEAD + len(body),
                                header.leader_epoch, header.magic, 0, attributes,
                                header.last_offset_delta, base_timestamp, header.max_timestamp,
                                header.producer_id, header.producer_epoch,
                                header.base_sequence, len(kept)))
    out += body
    struct.pack_into(">I", out, CRC_OFFSET, compute_crc(out))
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """A zigzag varint (or varlong)."""
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = raw & 0x7F
        raw >>= 7
        if raw:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(data: bytes | None) -> bytes:
    return encode_varint(-1) if data is None else encode_varint(len(data)) + data


def build_batch(entries: Sequence[tuple[bytes | None, bytes | None]], timestamp_ms: int, *,
                attributes: int = 0, producer_id: int = NO_PRODUCER_ID,
                producer_epoch: int = -1, base_sequence: int = NO_SEQUENCE) -> bytes:
    """An uncompressed batch (base offset 0, set on append) of (key, value) records, each with
    the batch's timestamp and no headers."""
    body = bytearray()
    for delta, (key, value) in enumerate(entries):
        record = (b"\x00" + encode_varint(0) + encode_varint(delta) + _field(key) + _field(value)
                  + encode_varint(0))
        body += encode_varint(len(record)) + record
    out = bytearray(HEADER.pack(0, HEADER_SIZE - LOG_OVERHEAD + len(body), 0, MAGIC_V2, 0,
                                attributes, max(0, len(entries) - 1), timestamp_ms,
                                timestamp_ms, producer_id, producer_epoch, base_sequence,
                                len(entries)))
    out += body
    struct.pack_into(">I", out, CRC_OFFSET, compute_crc(out))
    return bytes(out)
