"""Stored coordinator records as Kafka serializes them in its internal topics, for readers of
``__consumer_offsets``, ``__transaction_state`` and ``__share_group_state`` (Burrow, kcat,
kafka-console-consumer's ``OffsetsMessageFormatter``).

Kafka's key is an int16 key version (the record type) and the key's fields, its value an int16
version and the value's fields, both in the non-flexible encoding of Kafka's message schemas
(int16 string lengths, int32 array and bytes lengths, -1 for null). Each record is written in
the version Kafka 3.9 writes: ``OffsetCommitValue`` v1 when it has an expire timestamp, v3
otherwise; ``GroupMetadataValue`` v3; ``TransactionLogValue`` v0. The share coordinator's
``ShareSnapshot`` (key version 0) and ``ShareUpdate`` (key version 1) keys are non-flexible,
their values v0 in the flexible encoding (compact arrays, tagged fields: ``DeliveryCompleteCount``
is tag 0, written when it is not its default -1), as Kafka 4.x writes them. A tombstone stays a
null value. Record types Kafka does not keep in the topic (ours, and the flexible KIP-848 types, not
served yet) have no Kafka form: ``kafka_form`` returns None, and a reader sees a gap in the
offsets, as after compaction.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from storage.codec import uvarint

from .classic import GroupMetadataValue
from .offsets import OffsetCommitValue
from .registry import decode_record
from .share import ShareSnapshotValue, ShareStateBatch, ShareUpdateValue
from .transactions import TransactionLogValue

CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"
SHARE_GROUP_STATE = "__share_group_state"

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")


def _string(value: str | None) -> bytes:
    if value is None:
        return _H.pack(-1)
    data = value.encode("utf-8")
    return _H.pack(len(data)) + data


def _bytes(value: bytes | None) -> bytes:
    if value is None:
        return _I.pack(-1)
    return _I.pack(len(value)) + value


def _offset_commit(key: Any, value: OffsetCommitValue | None) -> tuple[bytes, bytes | None]:
    key_bytes = _H.pack(1) + _string(key.group) + _string(key.topic) + _I.pack(key.partition)
    if value is None:
        return key_bytes, None
    if value.expire_timestamp != -1:
        return key_bytes, (_H.pack(1) + _Q.pack(value.offset) + _string(value.metadata)
                           + _Q.pack(value.commit_timestamp) + _Q.pack(value.expire_timestamp))
    return key_bytes, (_H.pack(3) + _Q.pack(value.offset) + _I.pack(value.leader_epoch)
                       + _string(value.metadata) + _Q.pack(value.commit_timestamp))


def _group_metadata(key: Any, value: GroupMetadataValue | None) -> tuple[bytes, bytes | None]:
    key_bytes = _H.pack(2) + _string(key.group)
    if value is None:
        return key_bytes, None
    members = b"".join(
        _string(m.member_id) + _string(m.group_instance_id) + _string(m.client_id)
        + _string(m.client_host) + _I.pack(m.rebalance_timeout) + _I.pack(m.session_timeout)
        + _bytes(m.subscription) + _bytes(m.assignment)
        for m in value.members)
    return key_bytes, (_H.pack(3) + _string(value.protocol_type) + _I.pack(value.generation)
                       + _string(value.protocol) + _string(value.leader)
                       + _Q.pack(value.current_state_timestamp)
                       + _I.pack(len(value.members)) + members)


def _transaction_log(key: Any, value: TransactionLogValue | None
                     ) -> tuple[bytes, bytes | None]:
    key_bytes = _H.pack(0) + _string(key.transactional_id)
    if value is None:
        return key_bytes, None
    partitions = b"".join(
        _string(p.topic) + _I.pack(len(p.partition_ids))
        + b"".join(_I.pack(i) for i in p.partition_ids)
        for p in value.transaction_partitions)
    return key_bytes, (_H.pack(0) + _Q.pack(value.producer_id) + _H.pack(value.producer_epoch)
                       + _I.pack(value.transaction_timeout_ms)
                       + struct.pack(">b", value.transaction_status)
                       + _I.pack(len(value.transaction_partitions)) + partitions
                       + _Q.pack(value.transaction_last_update_timestamp_ms)
                       + _Q.pack(value.transaction_start_timestamp_ms))


_NO_TAGS = uvarint(0)


def _state_batches(batches: tuple[ShareStateBatch, ...]) -> bytes:
    """A flexible ``[]StateBatch``: a compact array, each element with no tagged fields."""
    return uvarint(len(batches) + 1) + b"".join(
        _Q.pack(b.first_offset) + _Q.pack(b.last_offset) + struct.pack(">b", b.delivery_state)
        + _H.pack(b.delivery_count) + _NO_TAGS for b in batches)


def _delivery_complete_tag(count: int) -> bytes:
    """The value's tagged fields: ``DeliveryCompleteCount`` (tag 0) unless it is -1."""
    if count == -1:
        return _NO_TAGS
    return uvarint(1) + uvarint(0) + uvarint(4) + _I.pack(count)


def _share_key(version: int, key: Any) -> bytes:
    return (_H.pack(version) + _string(key.group_id) + key.topic_id.bytes
            + _I.pack(key.partition))


def _share_snapshot(key: Any, value: ShareSnapshotValue | None) -> tuple[bytes, bytes | None]:
    key_bytes = _share_key(0, key)
    if value is None:
        return key_bytes, None
    return key_bytes, (_H.pack(0) + _I.pack(value.snapshot_epoch) + _I.pack(value.state_epoch)
                       + _I.pack(value.leader_epoch) + _Q.pack(value.start_offset)
                       + _Q.pack(value.create_timestamp) + _Q.pack(value.write_timestamp)
                       + _state_batches(value.state_batches)
                       + _delivery_complete_tag(value.delivery_complete_count))


def _share_update(key: Any, value: ShareUpdateValue | None) -> tuple[bytes, bytes | None]:
    key_bytes = _share_key(1, key)
    if value is None:
        return key_bytes, None
    return key_bytes, (_H.pack(0) + _I.pack(value.snapshot_epoch) + _I.pack(value.leader_epoch)
                       + _Q.pack(value.start_offset) + _state_batches(value.state_batches)
                       + _delivery_complete_tag(value.delivery_complete_count))


Form = Callable[[Any, Any], tuple[bytes, "bytes | None"]]
FORMS: dict[str, dict[int, Form]] = {
    CONSUMER_OFFSETS: {0: _offset_commit, 1: _offset_commit, 2: _group_metadata},
    TRANSACTION_STATE: {1010: _transaction_log},
    SHARE_GROUP_STATE: {1002: _share_snapshot, 1003: _share_update},
}
"""Topic -> stored type id -> its Kafka form."""


def kafka_form(topic: str, key_bytes: bytes, value_bytes: bytes | None
               ) -> tuple[bytes, bytes | None] | None:
    """The record's key and value as Kafka keeps them in ``topic``; None when the record is
    not one of that topic's."""
    forms = FORMS.get(topic)
    if forms is None or len(key_bytes) < 2:
        return None
    form = forms.get((key_bytes[0] << 8) | key_bytes[1])
    if form is None:
        return None
    key, value = decode_record(key_bytes, value_bytes)
    return form(key, value)
