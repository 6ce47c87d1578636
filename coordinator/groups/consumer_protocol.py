"""Reading the embedded consumer protocol of classic groups (protocol type "consumer"): the
topics a member subscribes to, from its ConsumerProtocolSubscription metadata."""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pkgutil import resolve_name
from typing import Any

from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from protocol.guard import check_lengths

_VERSION = struct.Struct(">h")
MAX_VERSION = 3


@cache
def _schema(version: int) -> tuple[type, Any]:
    cls = resolve_name(f"kio.schema.consumer_protocol_subscription.v{version}.data:"
                       "ConsumerProtocolSubscription")
    return cls, entity_reader(cls)


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The member's subscribed topics, or None if the metadata does not decode."""
    if len(metadata) < 2:
        return None
    (version,) = _VERSION.unpack_from(metadata, 0)
    # Newer versions only add fields after the ones we read: read them as the newest we know.
    version = min(max(version, 0), MAX_VERSION)
    cls, read = _schema(version)
    try:
        check_lengths(cls, metadata, 2)
        subscription, _ = read(metadata, 2)
    except Exception:
        return None
    return frozenset(subscription.topics)


# --- the full subscription and the assignment (mixed groups, issue 5 item 7) -------------------
@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: tuple[tuple[str, tuple[int, ...]], ...]
    rack_id: str | None


def decode_subscription(metadata: bytes) -> Subscription | None:
    """A member's ConsumerProtocolSubscription, or None if it does not decode."""
    if len(metadata) < 2:
        return None
    (raw,) = _VERSION.unpack_from(metadata, 0)
    if raw < 0:
        return None
    version = min(raw, MAX_VERSION)
    cls, read = _schema(version)
    try:
        check_lengths(cls, metadata, 2)
        sub, _ = read(metadata, 2)
    except Exception:
        return None
    owned = tuple((tp.topic, tuple(int(p) for p in tp.partitions))
                  for tp in getattr(sub, "owned_partitions", ()))
    return Subscription(raw, tuple(sub.topics), owned, getattr(sub, "rack_id", None))


@cache
def _assignment_schema(version: int) -> tuple[type, type, Any, Any]:
    base = f"kio.schema.consumer_protocol_assignment.v{version}.data:"
    cls = resolve_name(base + "ConsumerProtocolAssignment")
    tp = resolve_name(base + "TopicPartition")
    return cls, tp, entity_reader(cls), entity_writer(cls)


def decode_assignment(data: bytes) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
    """(topic, partitions) of a ConsumerProtocolAssignment; () for no bytes, None if it does
    not decode."""
    if not data:
        return ()
    if len(data) < 2:
        return None
    (raw,) = _VERSION.unpack_from(data, 0)
    if raw < 0:
        return None
    cls, _, read, _ = _assignment_schema(min(raw, MAX_VERSION))
    try:
        check_lengths(cls, data, 2)
        assignment, _ = read(data, 2)
    except Exception:
        return None
    return tuple((tp.topic, tuple(int(p) for p in tp.partitions))
                 for tp in assignment.assigned_partitions)


def encode_assignment(partitions: Iterable[tuple[str, Iterable[int]]], version: int = 0) -> bytes:
    """ConsumerProtocolAssignment bytes (version prefix included)."""
    version = min(max(version, 0), MAX_VERSION)
    cls, tp, _, write = _assignment_schema(version)
    value = cls(assigned_partitions=tuple(
        tp(topic=topic, partitions=tuple(i32(p) for p in sorted(parts)))
        for topic, parts in sorted(partitions)), user_data=None)
    buffer = io.BytesIO()
    buffer.write(_VERSION.pack(version))
    write(buffer, value)
    return buffer.getvalue()
