"""Decoding requests whose bodies repeat byte for byte: a steady member sends the same
heartbeat body every time (only the header's correlation id changes), so its decoded body is
kept and handed out again. Decoded bodies are kio's frozen entities, safe to share; what a
body decodes to depends only on its version and bytes, so a kept one is what decoding again
would give (the length guard and every check ran when it was first decoded)."""

from __future__ import annotations

from typing import Any

from .apikeys import ApiKey
from .codec import Request, decode_body, decode_request
from .header import parse_request_header, peek_fixed
from .schemas import schema

REPEATING_APIS = frozenset({ApiKey.HEARTBEAT, ApiKey.CONSUMER_GROUP_HEARTBEAT,
                            ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_HEARTBEAT})
"""The APIs whose bodies are kept: the steady heartbeats of each group type."""
KEPT = 100_000
"""Bodies kept at most (all are dropped when full: one body per member, so about as many
members as heartbeat steadily)."""
_MAX_BODY = 512
"""Longer bodies (a joining member's subscription) are not worth keeping."""

_bodies: dict[tuple[int, int, bytes], Any] = {}


def decode_repeated(frame: bytes | memoryview) -> Request:
    """``decode_request``, with the body of a steady heartbeat decoded once."""
    api_key, api_version, _ = peek_fixed(frame)
    if api_key not in REPEATING_APIS:
        return decode_request(frame)
    found = schema(api_key, api_version)
    header, offset = parse_request_header(frame, found.request_header_version)
    if len(frame) - offset > _MAX_BODY:
        return Request(header, decode_body(found, frame, offset), found)
    key = (api_key, api_version, bytes(frame[offset:]))
    body = _bodies.get(key)
    if body is None:
        body = decode_body(found, frame, offset)  # raises on a malformed body: nothing kept
        if len(_bodies) >= KEPT:
            _bodies.clear()
        _bodies[key] = body
    return Request(header, body, found)
