"""Transaction markers: the control batches the transaction coordinator writes to each
partition of a transaction (Kafka's ``EndTransactionMarker`` in a ``ControlRecordType``
record), built and read here.

A marker is a batch with the transactional and control bits set, the producer's id and epoch,
no sequence, and one record: key ``int16 version (0), int16 type (0 abort, 1 commit)``, value
``int16 version (0), int32 coordinator epoch``.
"""

from __future__ import annotations

import struct

from .batch import (
    CONTROL_BIT,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_SEQUENCE,
    TRANSACTIONAL_BIT,
    BatchHeader,
    compute_crc,
    read_varint,
)

ABORT, COMMIT = 0, 1
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


def _varint(value: int) -> bytes:
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


def marker_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                 timestamp_ms: int) -> bytes:
    """A control batch (base offset 0, set on append) holding one end-transaction marker."""
    key = _CONTROL_KEY.pack(0, COMMIT if commit else ABORT)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    body = (b"\x00" + _varint(0) + _varint(0) + _varint(len(key)) + key
            + _varint(len(value)) + value + _varint(0))
    record = _varint(len(body)) + body
    length = HEADER_SIZE - LOG_OVERHEAD + len(record)
    batch = bytearray(HEADER.pack(0, length, 0, MAGIC_V2, 0, TRANSACTIONAL_BIT | CONTROL_BIT, 0,
                                  timestamp_ms, timestamp_ms, producer_id, producer_epoch,
                                  NO_SEQUENCE, 1)) + record
    struct.pack_into(">I", batch, 17, compute_crc(batch))
    return bytes(batch)


def is_commit(batch: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    """Whether a stored control batch is a commit marker (False: an abort)."""
    pos = HEADER_SIZE
    _, pos = read_varint(batch, pos)  # record length
    pos += 1  # attributes
    _, pos = read_varint(batch, pos)  # timestamp delta
    _, pos = read_varint(batch, pos)  # offset delta
    key_length, pos = read_varint(batch, pos)
    if key_length < _CONTROL_KEY.size:
        return False
    _, kind = _CONTROL_KEY.unpack_from(batch, pos)
    return bool(kind == COMMIT)
