"""Request header v0-v2 decoding and response header v0/v1 encoding.

Kafka's request header is: api key (int16), api version (int16), correlation id (int32),
then from v1 a nullable int16-length client id (never compact, even in v2), then in v2 tagged
fields. Response header v0 is the correlation id; v1 adds tagged fields.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .errors import MalformedFrame

_FIXED = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_EMPTY_TAGS = b"\x00"


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int


def peek_fixed(frame: bytes | memoryview) -> tuple[int, int, int]:
    """Api key, api version and correlation id: the part every header version shares."""
    if len(frame) < _FIXED.size:
        raise MalformedFrame(f"frame of {len(frame)} bytes is shorter than a request header")
    return _FIXED.unpack_from(frame, 0)


def write_uvarint(out: bytearray, value: int) -> None:
    """Unsigned varint, as kio writes it (7-bit groups, least significant first)."""
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint(value: int) -> bytes:
    """``value`` as an unsigned varint."""
    out = bytearray()
    write_uvarint(out, value)
    return bytes(out)


def read_uvarint(buf: bytes | memoryview, offset: int) -> tuple[int, int]:
    """Unsigned varint at ``offset``: (value, next offset)."""
    value = 0
    shift = 0
    end = len(buf)
    while True:
        if offset >= end:
            raise MalformedFrame("truncated varint")
        byte = buf[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7
        if shift > 28:
            raise MalformedFrame("varint is longer than 5 bytes")


def skip_tagged_fields(buf: bytes | memoryview, offset: int) -> int:
    count, offset = read_uvarint(buf, offset)
    for _ in range(count):
        _tag, offset = read_uvarint(buf, offset)
        size, offset = read_uvarint(buf, offset)
        offset += size
        if offset > len(buf):
            raise MalformedFrame("tagged field runs past the end of the frame")
    return offset


def parse_request_header(
    frame: bytes | memoryview, header_version: int
) -> tuple[RequestHeader, int]:
    """Decode a request header of ``header_version``; returns it and the body's offset."""
    api_key, api_version, correlation_id = peek_fixed(frame)
    offset = _FIXED.size
    client_id: str | None = None
    if header_version >= 1:
        if len(frame) < offset + 2:
            raise MalformedFrame("truncated client id length")
        (length,) = _INT16.unpack_from(frame, offset)
        offset += 2
        if length >= 0:
            if len(frame) < offset + length:
                raise MalformedFrame("truncated client id")
            try:
                client_id = bytes(frame[offset : offset + length]).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise MalformedFrame("client id is not UTF-8") from exc
            offset += length
        elif length != -1:
            raise MalformedFrame(f"invalid client id length {length}")
    if header_version >= 2:
        offset = skip_tagged_fields(frame, offset)
    return RequestHeader(api_key, api_version, correlation_id, client_id, header_version), offset


def encode_request_header(header: RequestHeader) -> bytes:
    out = bytearray(_FIXED.pack(header.api_key, header.api_version, header.correlation_id))
    if header.header_version >= 1:
        if header.client_id is None:
            out += _INT16.pack(-1)
        else:
            raw = header.client_id.encode("utf-8")
            out += _INT16.pack(len(raw)) + raw
    if header.header_version >= 2:
        out += _EMPTY_TAGS
    return bytes(out)


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    if header_version >= 1:
        return _INT32.pack(correlation_id) + _EMPTY_TAGS
    return _INT32.pack(correlation_id)
