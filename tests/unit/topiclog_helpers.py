"""Record batches built the way producers build them (kafka-python's builder)."""

from __future__ import annotations

import struct

from kafka.record.default_records import DefaultRecordBatchBuilder

from coordinator.topiclog.batch import compute_crc


def make_batch(values: list[bytes], timestamp: int = 1_000, compression: int = 0,
               producer_id: int = -1, epoch: int = -1, sequence: int = -1,
               timestamps: list[int] | None = None) -> bytes:
    builder = DefaultRecordBatchBuilder(2, compression, False, producer_id, epoch, sequence,
                                        1 << 20)
    for i, value in enumerate(values):
        ts = timestamps[i] if timestamps else timestamp + i
        builder.append(i, ts, b"k%d" % i, value, [("h", b"v")])
    return bytes(builder.build())


def set_field(batch: bytes, offset: int, fmt: str, value: int, fix_crc: bool = True) -> bytes:
    out = bytearray(batch)
    struct.pack_into(fmt, out, offset, value)
    if fix_crc:
        struct.pack_into(">I", out, 17, compute_crc(out))
    return bytes(out)
