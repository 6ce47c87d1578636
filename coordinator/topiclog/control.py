"""Transaction markers: the control batches the transaction coordinator writes to each
partition of a transaction (Kafka's ``EndTransactionMarker`` in a ``ControlRecordType``
record), built and read here.

A marker is a batch with the transactional and control bits set, the producer's id and epoch,
no sequence, and one record: key ``int16 version (0), int16 type (0 abort, 1 commit)``, value
``int16 version (0), int32 coordinator epoch``.
"""

from __future__ import annotations

import struct

from .batch import CONTROL_BIT, HEADER_SIZE, TRANSACTIONAL_BIT, BatchHeader, read_varint
from .records import build_batch

ABORT, COMMIT = 0, 1
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


def marker_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                 timestamp_ms: int) -> bytes:
    """A control batch (base offset 0, set on append) holding one end-transaction marker."""
    key = _CONTROL_KEY.pack(0, COMMIT if commit else ABORT)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    return build_batch([(key, value)], timestamp_ms, attributes=TRANSACTIONAL_BIT | CONTROL_BIT,
                       producer_id=producer_id, producer_epoch=producer_epoch)


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
