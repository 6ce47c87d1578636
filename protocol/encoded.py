"""Response bodies encoded ahead of time: a handler that answers the same body again and again
(a steady heartbeat's) keeps its bytes, and only the frame around them is new per request."""

from __future__ import annotations

import struct
from typing import Any

from .header import encode_response_header
from .schemas import Schema

_SIZE = struct.Struct(">i")


class EncodedBody(bytes):
    """A response body (after the header) already encoded for the request's version."""


def encode_body(found: Schema, body: Any) -> EncodedBody:
    """``body`` (a response of ``found``'s version) encoded, without header or size prefix."""
    buf = bytearray()
    found.response_writer(body)(buf, body)
    return EncodedBody(buf)


def frame_encoded(found: Schema, correlation_id: int, body: EncodedBody) -> bytes:
    """A whole response frame, size prefix included, around an encoded body."""
    header = encode_response_header(correlation_id, found.response_header_version)
    return _SIZE.pack(len(header) + len(body)) + header + body
