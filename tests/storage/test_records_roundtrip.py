"""Every coordinator record type round-trips through the codec and the JSON view."""

from __future__ import annotations

import dataclasses
import json
import uuid
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import codec
from storage.errors import RecordDecodeError, UnknownRecordTypeError
from storage.records import (
    RECORD_TYPES,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareUpdateKey,
    ShareUpdateValue,
    TopicMetadataKey,
    TopicMetadataValue,
    TopicPartitions,
    decode_key,
    decode_record,
    decode_value,
    encode_key,
    encode_record,
    encode_value,
    record_from_json,
    record_to_json,
)

_INT = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}
_text = st.text(max_size=40)
_bytes = st.binary(max_size=40)
_uuid = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))


@cache  # built once per kind: a strategy built afresh is validated again on its first draw
def strategy(kind: codec.Kind) -> st.SearchStrategy[Any]:
    if kind.name in _INT:
        lo, hi = _INT[kind.name]
        return st.integers(lo, hi)
    simple: dict[codec.Kind, st.SearchStrategy[Any]] = {
        codec.BOOL: st.booleans(),
        codec.FLOAT64: st.floats(allow_nan=False),
        codec.STRING: _text,
        codec.NSTRING: st.none() | _text,
        codec.BYTES: _bytes,
        codec.NBYTES: st.none() | _bytes,
        codec.UUID: _uuid,
        codec.NUUID: st.none() | _uuid,
        codec.STRING_MAP: st.dictionaries(_text, _text, max_size=4),
    }
    if kind in simple:
        return simple[kind]
    if isinstance(kind, codec.Array):
        return st.lists(strategy(kind.elem), max_size=4).map(tuple)
    if isinstance(kind, codec.NStruct):
        return st.none() | struct_strategy(kind.cls)
    if isinstance(kind, codec.Struct):
        return struct_strategy(kind.cls)
    raise AssertionError(kind)


def _deferred(kind: codec.Kind) -> st.SearchStrategy[Any]:
    return st.deferred(lambda: strategy(kind))


_STRUCTS: dict[type, st.SearchStrategy[Any]] = {}


def struct_strategy(cls: type) -> st.SearchStrategy[Any]:
    """Built once per class (``functools.cache`` would do, but mypy takes classes for
    unhashable: mypy#11470)."""
    found = _STRUCTS.get(cls)
    if found is None:
        found = _STRUCTS[cls] = st.builds(
            cls, **{s.attr: _deferred(s.kind) for s in codec.fields_of(cls)})
    return found


ALL_TYPES = sorted(RECORD_TYPES)


def test_type_ids_are_kafkas() -> None:
    names = {tid: rt.name for tid, rt in RECORD_TYPES.items()}
    assert names == {
        1: "OffsetCommit",
        2: "GroupMetadata",
        3: "ConsumerGroupMetadata",
        4: "ConsumerGroupPartitionMetadata",
        5: "ConsumerGroupMemberMetadata",
        6: "ConsumerGroupTargetAssignmentMetadata",
        7: "ConsumerGroupTargetAssignmentMember",
        8: "ConsumerGroupCurrentMemberAssignment",
        9: "ShareGroupPartitionMetadata",
        10: "ShareGroupMemberMetadata",
        11: "ShareGroupMetadata",
        12: "ShareGroupTargetAssignmentMetadata",
        13: "ShareGroupTargetAssignmentMember",
        14: "ShareGroupCurrentMemberAssignment",
        15: "ShareGroupStatePartitionMetadata",
        16: "ConsumerGroupRegularExpression",
        17: "StreamsGroupMetadata",
        18: "StreamsGroupPartitionMetadata",
        19: "StreamsGroupMemberMetadata",
        20: "StreamsGroupTargetAssignmentMetadata",
        21: "StreamsGroupTargetAssignmentMember",
        22: "StreamsGroupCurrentMemberAssignment",
        23: "StreamsGroupTopology",
        1000: "TopicMetadata",
        1001: "GroupConfig",
        1002: "ShareSnapshot",  # Kafka's type 0 of __share_group_state
        1003: "ShareUpdate",  # Kafka's type 1 of __share_group_state
        1004: "AccessControlEntry",  # Kafka's metadata record type 18
        1005: "RemoveAccessControlEntry",  # Kafka's metadata record type 19
        1006: "UserScramCredential",  # Kafka's metadata record type 11
        1010: "TransactionLog",  # Kafka's __transaction_state record (key version 0)
        1011: "TxnOffsetCommit",  # ours: a pending transactional offset
        1012: "ConfigRecord",  # Kafka's metadata record type 4 (CLIENT_METRICS configs)
        1020: "ConsumerGroupHeldPartitions",  # ours: deferred resolution's held partitions
        1021: "StreamsGroupHeldTasks",  # ours: deferred resolution's held tasks
        1030: "ConsumerGroupMemberClientAssignors",  # ours: the draft's client-side assignors
        1031: "ConsumerGroupClientAssignment",  # ours: who computed a client-side target
    }


@pytest.mark.parametrize("type_id", ALL_TYPES, ids=[RECORD_TYPES[t].name for t in ALL_TYPES])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_round_trip(type_id: int, data: st.DataObject) -> None:
    rt = RECORD_TYPES[type_id]
    key = data.draw(struct_strategy(rt.key_cls))
    value = data.draw(st.none() | struct_strategy(rt.value_cls))
    key_bytes, value_bytes = encode_record(key, value)
    assert int.from_bytes(key_bytes[:2], "big") == type_id
    assert (value_bytes is None) == (value is None)
    assert decode_record(key_bytes, value_bytes) == (key, value)
    # the JSON view is JSON and round-trips too
    as_json = record_to_json(key, value)
    assert as_json["type"] == rt.name
    assert record_from_json(json.loads(json.dumps(as_json))) == (key, value)


def test_json_uses_kafka_field_names() -> None:
    key = ConsumerGroupTargetAssignmentMetadataKey(group_id="g")
    value = ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=7, timestamp=1234)
    assert record_to_json(key, value) == {
        "type": "ConsumerGroupTargetAssignmentMetadata",
        "key": {"GroupId": "g"},
        "value": {"AssignmentEpoch": 7, "Timestamp": 1234},
    }
    ok = OffsetCommitKey(group="g", topic="t", partition=0)
    assert record_to_json(ok, None) == {
        "type": "OffsetCommit",
        "key": {"group": "g", "topic": "t", "partition": 0},
        "value": None,
    }
    ov = record_to_json(ok, OffsetCommitValue(offset=5, commit_timestamp=9))["value"]
    assert set(ov) == {
        "offset",
        "leaderEpoch",
        "metadata",
        "commitTimestamp",
        "expireTimestamp",
        "topicId",
    }


def test_uuid_printed_as_kafka_does() -> None:
    tid = uuid.UUID("5a3c8f7e-1b2d-4c6e-8f90-123456789abc")
    row = record_to_json(
        TopicMetadataKey(name="orders"),
        TopicMetadataValue(topic_id=tid, num_partitions=3, configs={"cleanup.policy": "delete"}),
    )
    assert row["value"] == {
        "TopicId": codec.kafka_uuid_str(tid),
        "NumPartitions": 3,
        "Configs": {"cleanup.policy": "delete"},
    }
    assert len(row["value"]["TopicId"]) == 22  # base64url without padding, as Kafka's Uuid


def test_legacy_offset_commit_key_version_zero_decodes() -> None:
    key = OffsetCommitKey(group="g", topic="t", partition=1)
    raw = b"\x00\x00" + encode_key(key)[2:]
    assert decode_key(raw) == key


def test_decode_errors() -> None:
    key = OffsetCommitKey(group="g", topic="t", partition=1)
    value = OffsetCommitValue(offset=1, commit_timestamp=2)
    kb, vb = encode_record(key, value)
    assert vb is not None
    with pytest.raises(UnknownRecordTypeError):
        decode_key(b"\x03\xe7" + kb[2:])  # 999
    with pytest.raises(RecordDecodeError):
        decode_key(kb + b"x")
    with pytest.raises(RecordDecodeError):
        decode_key(kb[:-1])
    with pytest.raises(RecordDecodeError):
        decode_value(1, vb[:-3])
    with pytest.raises(RecordDecodeError, match="version 9"):
        decode_value(1, b"\x00\x09" + vb[2:])
    with pytest.raises(TypeError):
        encode_record(key, ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=1))


def test_tombstone_and_value_helpers() -> None:
    assert encode_value(None) is None
    assert decode_value(1, None) is None


def test_records_are_frozen() -> None:
    key = OffsetCommitKey(group="g", topic="t", partition=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        key.group = "h"  # type: ignore[misc]  # the point: records are frozen


def test_newer_field_decodes_with_default_from_older_version() -> None:
    @codec.codec
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class V:
        a: int = codec.f(codec.INT32)
        b: str = codec.f(codec.STRING, default="dflt", since=1)

    out = bytearray()
    codec.encode_struct(V(a=1, b="x"), out)
    assert codec.decode_struct(V, bytes(out), 0, 1) == (V(a=1, b="x"), len(out))
    old = out[:4]  # a version-0 writer wrote only ``a``
    assert codec.decode_struct(V, bytes(old), 0, 0) == (V(a=1), 4)


def test_an_encoded_once_array_is_encoded_once_and_identically() -> None:
    """An array field given as ``EncodedOnce`` keeps its first encoding: later records reuse
    it byte for byte, and decode to the same value as a plain tuple would."""
    parts = tuple(TopicPartitions(topic_id=uuid.UUID(int=i + 1), partitions=(i, i + 7))
                  for i in range(3))
    once = codec.EncodedOnce(parts)
    key = ConsumerGroupCurrentMemberAssignmentKey(group_id="g", member_id="m")

    def value(epoch: int, assigned: tuple[TopicPartitions, ...]) -> Any:
        return ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=epoch, previous_member_epoch=epoch - 1, state=0,
            assigned_partitions=assigned, partitions_pending_revocation=())

    assert once.encoded is None
    first = encode_record(key, value(5, once))
    assert once.encoded is not None
    assert first == encode_record(key, value(5, parts))  # same bytes as a plain tuple
    assert encode_record(key, value(6, once)) == encode_record(key, value(6, parts))
    decoded = decode_record(*encode_record(key, value(6, once)))[1]
    assert decoded.assigned_partitions == parts and decoded.member_epoch == 6


def test_share_state_records_have_kafkas_fields_and_one_key_layout() -> None:
    tid = uuid.UUID("5a3c8f7e-1b2d-4c6e-8f90-123456789abc")
    batches = (ShareStateBatch(first_offset=10, last_offset=19, delivery_state=2,
                               delivery_count=1),
               ShareStateBatch(first_offset=20, last_offset=20, delivery_state=0,
                               delivery_count=3))
    snap_key = ShareSnapshotKey(group_id="g", topic_id=tid, partition=3)
    snap = ShareSnapshotValue(snapshot_epoch=2, state_epoch=5, leader_epoch=0, start_offset=10,
                              delivery_complete_count=10, create_timestamp=7,
                              write_timestamp=8, state_batches=batches)
    update_key = ShareUpdateKey(group_id="g", topic_id=tid, partition=3)
    update = ShareUpdateValue(snapshot_epoch=2, leader_epoch=0, start_offset=-1,
                              state_batches=batches[1:])
    for key, value in ((snap_key, snap), (update_key, update), (snap_key, None)):
        assert decode_record(*encode_record(key, value)) == (key, value)
    kb_snap, _ = encode_record(snap_key, snap)
    kb_update, _ = encode_record(update_key, update)
    assert kb_snap[:2] == (1002).to_bytes(2, "big") and kb_update[:2] == (1003).to_bytes(2, "big")
    assert kb_snap[2:] == kb_update[2:]  # compaction maps one to the other by the type id
    assert record_to_json(snap_key, snap) == {
        "type": "ShareSnapshot",
        "key": {"GroupId": "g", "TopicId": codec.kafka_uuid_str(tid), "Partition": 3},
        "value": {
            "SnapshotEpoch": 2, "StateEpoch": 5, "LeaderEpoch": 0, "StartOffset": 10,
            "DeliveryCompleteCount": 10, "CreateTimestamp": 7, "WriteTimestamp": 8,
            "StateBatches": [
                {"FirstOffset": 10, "LastOffset": 19, "DeliveryState": 2, "DeliveryCount": 1},
                {"FirstOffset": 20, "LastOffset": 20, "DeliveryState": 0, "DeliveryCount": 3},
            ],
        },
    }
    assert record_to_json(update_key, update)["value"] == {
        "SnapshotEpoch": 2, "LeaderEpoch": 0, "StartOffset": -1,
        "DeliveryCompleteCount": -1,  # Kafka's default of the tagged field
        "StateBatches": [
            {"FirstOffset": 20, "LastOffset": 20, "DeliveryState": 0, "DeliveryCount": 3},
        ],
    }
