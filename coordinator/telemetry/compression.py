"""The compression types a PushTelemetry payload may use (Kafka's ``CompressionType`` ids), each
decompressed with a bound on the output, so a small payload cannot expand without limit."""

from __future__ import annotations

import io
import struct
import zlib

import cramjam
import lz4.frame
import zstandard

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
ACCEPTED = (ZSTD, LZ4, GZIP, SNAPPY)
"""What GetTelemetrySubscriptions offers, in Kafka's order of preference."""

_XERIAL_MAGIC = b"\x82SNAPPY\x00"


class CompressionError(Exception):
    """The payload does not decompress (corrupt, truncated, or larger than allowed)."""


def supported(compression_type: int) -> bool:
    return compression_type == NONE or compression_type in ACCEPTED


def decompress(compression_type: int, data: bytes, max_bytes: int) -> bytes:
    """``data`` decompressed, at most ``max_bytes`` of it; CompressionError otherwise."""
    try:
        if compression_type == NONE:
            out = data
        elif compression_type == GZIP:
            out = _gzip(data, max_bytes)
        elif compression_type == SNAPPY:
            out = _snappy(data, max_bytes)
        elif compression_type == LZ4:
            decompressor = lz4.frame.LZ4FrameDecompressor()
            out = decompressor.decompress(data, max_length=max_bytes + 1)
            if not decompressor.eof and len(out) <= max_bytes:
                raise CompressionError("truncated lz4 frame")
        elif compression_type == ZSTD:
            out = _zstd(data, max_bytes)
        else:
            raise CompressionError(f"unknown compression type {compression_type}")
    except CompressionError:
        raise
    except Exception as exc:  # each library's own error for corrupt input
        raise CompressionError(f"corrupt payload: {exc}") from None
    if len(out) > max_bytes:
        raise CompressionError(f"decompressed payload larger than {max_bytes} bytes")
    return bytes(out)


_ZSTD = zstandard.ZstdDecompressor()
"""One decompressor for every push (they are decompressed one at a time, on the event loop)."""


def _zstd(data: bytes, max_bytes: int) -> bytes:
    size = zstandard.frame_content_size(data)  # what the frame says it holds, -1 unknown
    if 0 <= size <= max_bytes:
        return _ZSTD.decompress(data)
    if size > max_bytes:
        raise CompressionError(f"decompressed payload larger than {max_bytes} bytes")
    with _ZSTD.stream_reader(io.BytesIO(data)) as reader:
        return reader.read(max_bytes + 1)


def _gzip(data: bytes, max_bytes: int) -> bytes:
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = decompressor.decompress(data, max_bytes + 1)
    if not decompressor.eof and len(out) <= max_bytes:
        raise CompressionError("truncated gzip stream")
    return out


def _snappy(data: bytes, max_bytes: int) -> bytes:
    """Raw snappy (librdkafka) or xerial's framing (Java's SnappyOutputStream): a magic header,
    then blocks of a 4-byte length and a raw snappy block."""
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_block(data, max_bytes)
    pos, out = 16, bytearray()
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressionError("truncated snappy block length")
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CompressionError("truncated snappy block")
        out += _snappy_block(data[pos:pos + size], max_bytes - len(out))
        pos += size
    return bytes(out)


def _snappy_block(block: bytes, max_bytes: int) -> bytes:
    length, shift = 0, 0
    for i, byte in enumerate(block[:5]):  # the uncompressed length, a varint
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
        if i == 4:
            raise CompressionError("bad snappy length")
    if length > max_bytes:
        raise CompressionError(f"decompressed payload larger than {max_bytes} bytes")
    return bytes(cramjam.snappy.decompress_raw(block))
