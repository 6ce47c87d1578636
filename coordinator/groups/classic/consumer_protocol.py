"""The embedded consumer protocol of classic members (protocol type "consumer"): their
ConsumerProtocolSubscription metadata, and the ConsumerProtocolAssignment bytes SyncGroup
carries, read safely from untrusted bytes."""

from __future__ import annotations

import io
import struct
from collections.abc import Callable, Iterable
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


def _read_versioned(data: bytes, schema: Callable[[int], tuple[type, Any]], *,
                    negative_as_v0: bool = False) -> tuple[int, Any] | None:
    """(version on the wire, decoded value) of an embedded-protocol struct that starts with an
    int16 version, or None if it does not decode. Versions newer than we know only add fields
    after the ones we read, so they are read as the newest we know; every length is checked
    before kio reads (see ``protocol.guard``)."""
    if len(data) < 2:
        return None
    (raw,) = _VERSION.unpack_from(data, 0)
    if raw < 0 and not negative_as_v0:
        return None
    cls, read = schema(min(max(raw, 0), MAX_VERSION))
    try:
        check_lengths(cls, data, 2)
        value, _ = read(data, 2)
    except Exception:
        return None
    return raw, value


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The member's subscribed topics, or None if the metadata does not decode."""
    found = _read_versioned(metadata, _schema, negative_as_v0=True)
    return None if found is None else frozenset(found[1].topics)


# --- the full subscription and the assignment (mixed groups, issue 5 item 7) -------------------
@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: tuple[tuple[str, tuple[int, ...]], ...]
    rack_id: str | None


def decode_subscription(metadata: bytes) -> Subscription | None:
    """A member's ConsumerProtocolSubscription, or None if it does not decode."""
    found = _read_versioned(metadata, _schema)
    if found is None:
        return None
    raw, sub = found
    owned = tuple((tp.topic, tuple(int(p) for p in tp.partitions))
                  for tp in getattr(sub, "owned_partitions", ()))
    return Subscription(raw, tuple(sub.topics), owned, getattr(sub, "rack_id", None))


@cache
def _assignment_schema(version: int) -> tuple[type, type, Any, Any]:
    base = f"kio.schema.consumer_protocol_assignment.v{version}.data:"
    cls = resolve_name(base + "ConsumerProtocolAssignment")
    tp = resolve_name(base + "TopicPartition")
    return cls, tp, entity_reader(cls), entity_writer(cls)


def _assignment_reader(version: int) -> tuple[type, Any]:
    cls, _, read, _ = _assignment_schema(version)
    return cls, read


def decode_assignment(data: bytes) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
    """(topic, partitions) of a ConsumerProtocolAssignment; () for no bytes, None if it does
    not decode."""
    if not data:
        return ()
    found = _read_versioned(data, _assignment_reader)
    if found is None:
        return None
    assignment = found[1]
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
