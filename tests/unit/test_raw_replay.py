"""A load replays offset commits from their bytes (``CoordinatorShard.replay_records``): the state
is the one decoding each record and replaying it gives, and bad bytes fail the same way."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.groups.replay import new_shard
from storage import codec
from storage.errors import RecordDecodeError
from storage.records import (
    RECORD_TYPES,
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
    encode_key,
    encode_record,
)
from tests.storage.test_records_roundtrip import struct_strategy


def _raw(shard: Any, records: list[tuple[int, bytes, bytes | None]],
         decoded: frozenset[bytes] = frozenset()) -> list[int]:
    """Replay ``records`` (offset, key bytes, value bytes) as a load does; the offsets of those
    handed back to be decoded."""
    handed_back: list[int] = []
    shard.replay_records([(offset, 0, key, value) for offset, key, value in records], decoded,
                         lambda offset, ts, key, value: handed_back.append(offset))
    return handed_back

# few groups and partitions, so that keys repeat (later records replace, tombstones remove)
_keys = st.builds(OffsetCommitKey, group=st.sampled_from(["g", "ü" * 70, "x" * 200]),
                  topic=st.sampled_from(["t", "orders"]), partition=st.integers(0, 2))
_values = st.builds(
    OffsetCommitValue, offset=st.integers(-1, 2**63 - 1), leader_epoch=st.integers(-1, 2**31 - 1),
    metadata=st.text(max_size=150), commit_timestamp=st.integers(0, 2**62),
    expire_timestamp=st.integers(-1, 2**62),
    topic_id=st.none() | st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1)))
_records = st.lists(st.tuples(_keys, st.none() | _values), max_size=40)


@settings(max_examples=60, deadline=None)
@given(records=_records)
def test_raw_replay_gives_the_state_decoded_records_give(records: list[tuple[Any, Any]]
                                                         ) -> None:
    decoded, raw = new_shard(0), new_shard(0)
    encoded = [(offset, *encode_record(key, value)) for offset, (key, value) in enumerate(records)]
    for offset, key_bytes, value_bytes in encoded:
        decoded.replay(offset, *decode_record(key_bytes, value_bytes))
    assert _raw(raw, encoded) == []
    assert raw.offsets._groups == decoded.offsets._groups
    assert raw.last_offset == decoded.last_offset


def test_a_legacy_key_version_zero_is_replayed_raw_too() -> None:
    key = OffsetCommitKey(group="g", topic="t", partition=1)
    value = OffsetCommitValue(offset=42, leader_epoch=3, metadata="m", commit_timestamp=7)
    key_bytes, value_bytes = encode_record(key, value)
    shard = new_shard(0)
    assert _raw(shard, [(5, b"\x00\x00" + key_bytes[2:], value_bytes)]) == []
    committed = shard.offsets.get("g", "t", 1)
    assert committed is not None and (committed.offset, committed.leader_epoch) == (42, 3)


def test_other_types_and_the_listeners_are_left_to_the_decoding_path() -> None:
    commit = encode_record(OffsetCommitKey(group="g", topic="t", partition=1), OffsetCommitValue(
        offset=1, leader_epoch=0, metadata="", commit_timestamp=2))
    shard = new_shard(0)
    assert _raw(shard, [(0, encode_key(GroupMetadataKey(group="g")), None), (1, *commit)]) == [0]
    assert shard.offsets.get("g", "t", 1) is not None and shard.last_offset == 1
    # offset commits wanted as objects (by the record listener): decoded too
    assert _raw(new_shard(0), [(1, *commit)], frozenset({commit[0][:2]})) == [1]


@pytest.mark.parametrize("damage", ["truncated key", "trailing key", "truncated value",
                                    "trailing value", "short value", "newer version",
                                    "bad utf-8"])
def test_bad_bytes_fail_as_decoding_fails(damage: str) -> None:
    key_bytes, value_bytes = encode_record(
        OffsetCommitKey(group="g", topic="t", partition=1),
        OffsetCommitValue(offset=1, leader_epoch=0, metadata="meta", commit_timestamp=2))
    assert value_bytes is not None
    newest = OffsetCommitValue.VERSION
    key_bytes, value_bytes = {
        "truncated key": (key_bytes[:-1], value_bytes),
        "trailing key": (key_bytes + b"\x00", value_bytes),
        "truncated value": (key_bytes, value_bytes[:-3]),
        "trailing value": (key_bytes, value_bytes + b"\x00"),
        "short value": (key_bytes, value_bytes[:1]),
        "newer version": (key_bytes, (newest + 1).to_bytes(2, "big") + value_bytes[2:]),
        "bad utf-8": (key_bytes, value_bytes.replace(b"meta", b"\xff\xfe\xfd\xfc")),
    }[damage]
    with pytest.raises(RecordDecodeError) as decoding:
        decode_record(key_bytes, value_bytes)
    with pytest.raises(RecordDecodeError) as raw:
        _raw(new_shard(0), [(0, key_bytes, value_bytes)])
    assert str(raw.value) == str(decoding.value)


_FIELD_SUBSETS: dict[type, st.SearchStrategy[list[str]]] = {}


def _field_subsets(cls: type) -> st.SearchStrategy[list[str]]:
    """Subsets of the class's fields, in any order: built once per class."""
    found = _FIELD_SUBSETS.get(cls)
    if found is None:
        names = [f.name for f in dataclasses.fields(cls)]
        found = _FIELD_SUBSETS[cls] = (st.lists(st.sampled_from(names), unique=True)
                                       if names else st.just([]))
    return found


@pytest.mark.parametrize("type_id", sorted(RECORD_TYPES),
                         ids=[rt.name for _, rt in sorted(RECORD_TYPES.items())])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_a_field_decoder_reads_what_the_full_decoder_reads(type_id: int,
                                                           data: st.DataObject) -> None:
    """Any record class, any subset of its fields (the others skipped, not built)."""
    cls = RECORD_TYPES[type_id].value_cls
    attrs = data.draw(_field_subsets(cls))
    value = data.draw(struct_strategy(cls))
    out = bytearray()
    codec.encode_struct(value, out)
    decoded, end = cls._codec_decode_body(bytes(out), 0, cls.VERSION)
    fields, fields_end = codec.field_decoder(cls, attrs)(bytes(out), 0, cls.VERSION)
    assert fields == tuple(getattr(decoded, a) for a in attrs) and fields_end == end == len(out)
