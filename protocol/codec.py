"""Frames in, messages out, and back: the one codec for every message we serve.

A frame is the bytes after the 4-byte size prefix. ``decode_request`` returns the header and
the decoded body; ``encode_response`` returns a whole size-prefixed frame ready for the socket.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from .errors import MalformedFrame
from .guard import check_lengths
from .header import (
    RequestHeader,
    encode_request_header,
    encode_response_header,
    parse_request_header,
    peek_fixed,
    skip_tagged_fields,
)
from .schemas import Schema, schema
from .tagged import without_unknown_tags

_SIZE = struct.Struct(">i")
_SIZE_PLACEHOLDER = b"\x00\x00\x00\x00"


@dataclass(frozen=True, slots=True)
class Request:
    header: RequestHeader
    body: Any
    schema: Schema


def decode_request(frame: bytes | memoryview) -> Request:
    """Decode one request frame.

    Raises ``UnknownApi``/``UnknownSchema`` when the codec has no schema for the key or version,
    and ``MalformedFrame`` when the bytes do not decode, or do not end where the body ends.
    """
    api_key, api_version, _ = peek_fixed(frame)
    found = schema(api_key, api_version)
    header, offset = parse_request_header(frame, found.request_header_version)
    body = decode_body(found, frame, offset)
    return Request(header, body, found)


def decode_body(found: Schema, frame: bytes | memoryview, offset: int) -> Any:
    # kio's native reader reserves memory for a declared length before reading, and a huge one
    # aborts the whole process: every length is checked against the frame first.
    check_lengths(found.request_type, frame, offset)
    try:
        body, size = found.read_request(frame, offset)
    except Exception as exc:  # the native reader raises several types on bad input
        # kio refuses tags it does not know; Kafka skips them: read a copy without them
        stripped = without_unknown_tags(found.request_type, frame, offset)
        if stripped is None:
            raise MalformedFrame(f"undecodable {found.request_type.__name__}: {exc}") from exc
        try:
            body, size = found.read_request(stripped, offset)
        except Exception as again:
            raise MalformedFrame(
                f"undecodable {found.request_type.__name__}: {again}") from again
        frame = stripped
    if offset + size > len(frame):
        raise MalformedFrame(f"{found.request_type.__name__} runs past the end of the frame")
    # Like Kafka, bytes after the body are ignored: librdkafka's Metadata v13 carries some.
    return body


def encode_response(found: Schema, correlation_id: int, body: Any) -> bytes:
    """A whole response frame, size prefix included."""
    buf = bytearray(_SIZE_PLACEHOLDER)
    buf += encode_response_header(correlation_id, found.response_header_version)
    found.response_writer(body)(buf, body)
    _SIZE.pack_into(buf, 0, len(buf) - 4)
    return bytes(buf)


def encode_request(
    body: Any, correlation_id: int = 0, client_id: str | None = "kafka-laptop"
) -> bytes:
    """A whole request frame, size prefix included (for tests, benchmarks and tools)."""
    found = schema(int(body.__api_key__), int(body.__version__))
    header = RequestHeader(
        found.api_key, found.version, correlation_id, client_id, found.request_header_version
    )
    buf = bytearray(_SIZE_PLACEHOLDER)
    buf += encode_request_header(header)
    found.request_writer(body)(buf, body)
    _SIZE.pack_into(buf, 0, len(buf) - 4)
    return bytes(buf)


def decode_response(found: Schema, frame: bytes | memoryview) -> tuple[int, Any]:
    """Correlation id and body of a response frame (size prefix removed)."""
    (correlation_id,) = _SIZE.unpack_from(frame, 0)
    offset = 4
    if found.response_header_version >= 1:
        offset = skip_tagged_fields(frame, offset)
    body, _ = found.read_response(frame, offset)
    return correlation_id, body
