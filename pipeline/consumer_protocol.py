"""The embedded consumer protocol of classic groups (protocol type ``consumer``): the
assignment and subscription bytes stored in GroupMetadata members.

Versions 0-3 of ConsumerProtocolAssignment / ConsumerProtocolSubscription are not flexible: an
``int16`` version, then ``int32``-counted arrays and ``int16``-length strings. Only the fields the
analytics need are read; bytes that do not parse give ``None``.
"""

from __future__ import annotations

import struct

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

TopicPartitionList = list[tuple[str, list[int]]]


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = _I16.unpack_from(buf, pos)
    pos += 2
    if n < 0 or pos + n > len(buf):
        raise ValueError("bad string")
    return buf[pos : pos + n].decode(), pos + n


def decode_assignment(data: bytes | None) -> TopicPartitionList | None:
    """``[(topic, [partitions])]`` of a ConsumerProtocolAssignment, or None."""
    if not data or len(data) < 6:
        return None
    try:
        pos = 2
        (count,) = _I32.unpack_from(data, pos)
        pos += 4
        if count < 0 or count > len(data):
            return None
        out: TopicPartitionList = []
        for _ in range(count):
            topic, pos = _string(data, pos)
            (n,) = _I32.unpack_from(data, pos)
            pos += 4
            if n < 0 or pos + 4 * n > len(data):
                return None
            out.append((topic, list(struct.unpack_from(f">{n}i", data, pos))))
            pos += 4 * n
        return out
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


def decode_subscription(data: bytes | None) -> list[str] | None:
    """The topics of a ConsumerProtocolSubscription, or None."""
    if not data or len(data) < 6:
        return None
    try:
        (count,) = _I32.unpack_from(data, 2)
        pos = 6
        if count < 0 or count > len(data):
            return None
        topics = []
        for _ in range(count):
            topic, pos = _string(data, pos)
            topics.append(topic)
        return topics
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


def _str(s: str) -> bytes:
    raw = s.encode()
    return _I16.pack(len(raw)) + raw


def encode_assignment(assignment: TopicPartitionList) -> bytes:
    """Version 0, no user data (what the synthetic stores and tests write)."""
    out = bytearray(_I16.pack(0) + _I32.pack(len(assignment)))
    for topic, partitions in assignment:
        out += _str(topic) + _I32.pack(len(partitions))
        out += struct.pack(f">{len(partitions)}i", *partitions)
    out += _I32.pack(-1)
    return bytes(out)


def encode_subscription(topics: list[str]) -> bytes:
    out = bytearray(_I16.pack(0) + _I32.pack(len(topics)))
    for topic in topics:
        out += _str(topic)
    out += _I32.pack(-1)
    return bytes(out)
