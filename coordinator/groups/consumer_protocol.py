"""Reading the embedded consumer protocol of classic groups (protocol type "consumer"): the
topics a member subscribes to, from its ConsumerProtocolSubscription metadata."""

from __future__ import annotations

import struct
from functools import cache
from pkgutil import resolve_name
from typing import Any

from kio.serial import entity_reader

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
