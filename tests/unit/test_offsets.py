"""The pure OffsetCommit / OffsetFetch handlers of coordinator/offsets.py and their state."""

from __future__ import annotations

import pytest

from coordinator.groups.common.offsets import (
    NO_LEADER_EPOCH,
    CommittedOffset,
    OffsetCommit,
    OffsetsState,
    PartitionCommit,
    commit,
    fetch,
)
from coordinator.runtime import Result
from protocol import ErrorCode
from storage.records import OffsetCommitKey, OffsetCommitValue, decode_record, encode_record

NOW = 1_700_000_000_000
MAX_METADATA = 4096


def request(*partitions: PartitionCommit, group: str = "g", generation: int = -1,
            member: str = "", retention_ms: int = -1, version: int = 8) -> OffsetCommit:
    return OffsetCommit(group, generation, member, retention_ms, partitions, version)


def part(partition: int, offset: int, topic: str = "orders", epoch: int = NO_LEADER_EPOCH,
         metadata: str | None = "") -> PartitionCommit:
    return PartitionCommit(topic, partition, offset, epoch, metadata)


def apply(state: OffsetsState, result: Result) -> None:
    """Replay a result's records, as the runtime does after writing them (through the codec, so
    the records are ones the store can hold)."""
    for key, value in result.records:
        decoded_key, decoded_value = decode_record(*encode_record(key, value))
        state.replay(decoded_key, decoded_value)


# --------------------------------------------------------------------------- commit
def test_a_manual_assignment_commit_writes_one_record_per_partition() -> None:
    state = OffsetsState()
    result = commit(state, request(part(0, 10), part(1, 20, epoch=3, metadata="m")), NOW,
                    MAX_METADATA, group_exists=False)
    assert result.response == {("orders", 0): ErrorCode.none, ("orders", 1): ErrorCode.none}
    assert result.records == [
        (OffsetCommitKey(group="g", topic="orders", partition=0),
         OffsetCommitValue(offset=10, leader_epoch=-1, metadata="", commit_timestamp=NOW,
                           expire_timestamp=-1)),
        (OffsetCommitKey(group="g", topic="orders", partition=1),
         OffsetCommitValue(offset=20, leader_epoch=3, metadata="m", commit_timestamp=NOW,
                           expire_timestamp=-1)),
    ]
    assert state.get("g", "orders", 0) is None  # pure: the handler does not touch the state
    apply(state, result)
    assert state.get("g", "orders", 0) == CommittedOffset(10, -1, "", NOW, -1)
    assert state.get("g", "orders", 1) == CommittedOffset(20, 3, "m", NOW, -1)


def test_an_offset_commit_v1_timestamp_is_kept_and_minus_one_means_now() -> None:
    stamped = PartitionCommit("orders", 0, 5, NO_LEADER_EPOCH, "", commit_timestamp=1234)
    result = commit(OffsetsState(), request(stamped, part(1, 6), version=1), NOW, MAX_METADATA,
                    False)
    assert [value.commit_timestamp for _, value in result.records if value is not None] == [
        1234, NOW]


def test_null_metadata_is_stored_as_empty() -> None:
    result = commit(OffsetsState(), request(part(0, 1, metadata=None)), NOW, MAX_METADATA, False)
    [(_key, value)] = result.records
    assert value is not None and value.metadata == ""


@pytest.mark.parametrize(("version", "code"), [
    (2, ErrorCode.illegal_generation),
    (8, ErrorCode.illegal_generation),
    (9, ErrorCode.group_id_not_found),
])
def test_a_generation_for_an_unknown_group_is_refused(version: int, code: ErrorCode) -> None:
    result = commit(OffsetsState(), request(part(0, 1), part(1, 2), generation=0,
                                            member="m-1", version=version),
                    NOW, MAX_METADATA, group_exists=False)
    assert result.records == ()
    assert result.response == {("orders", 0): code, ("orders", 1): code}


def test_generation_minus_one_needs_no_group() -> None:
    for version in (2, 9):
        result = commit(OffsetsState(), request(part(0, 1), generation=-1, version=version),
                        NOW, MAX_METADATA, group_exists=False)
        assert result.response == {("orders", 0): ErrorCode.none}
        assert len(result.records) == 1


def test_a_generation_for_a_known_group_is_written() -> None:
    result = commit(OffsetsState(), request(part(0, 1), generation=3, member="m", version=9),
                    NOW, MAX_METADATA, group_exists=True)
    assert result.response == {("orders", 0): ErrorCode.none}
    assert len(result.records) == 1


def test_too_large_metadata_fails_only_its_partition() -> None:
    big = "x" * (MAX_METADATA + 1)
    exact = "y" * MAX_METADATA
    result = commit(OffsetsState(), request(part(0, 1, metadata=big), part(1, 2, metadata=exact)),
                    NOW, MAX_METADATA, False)
    assert result.response == {("orders", 0): ErrorCode.offset_metadata_too_large,
                               ("orders", 1): ErrorCode.none}
    assert [key.partition for key, _ in result.records] == [1]


def test_metadata_size_is_counted_in_utf8_bytes() -> None:
    # 3 characters, 6 bytes
    result = commit(OffsetsState(), request(part(0, 1, metadata="äöü")), NOW, 5, False)
    assert result.response == {("orders", 0): ErrorCode.offset_metadata_too_large}
    assert result.records == []


@pytest.mark.parametrize(("retention_ms", "expire"), [
    (-1, -1),
    (0, NOW),
    (60_000, NOW + 60_000),
    (7 * 24 * 3600 * 1000, NOW + 7 * 24 * 3600 * 1000),
])
def test_retention_time_sets_the_expire_timestamp(retention_ms: int, expire: int) -> None:
    result = commit(OffsetsState(), request(part(0, 5), retention_ms=retention_ms, version=4),
                    NOW, MAX_METADATA, False)
    [(_key, value)] = result.records
    assert value is not None and value.commit_timestamp == NOW
    assert value.expire_timestamp == expire


# --------------------------------------------------------------------------- replay and fetch
def test_a_later_commit_replaces_an_earlier_one() -> None:
    state = OffsetsState()
    apply(state, commit(state, request(part(0, 1)), NOW, MAX_METADATA, False))
    apply(state, commit(state, request(part(0, 7, epoch=2)), NOW + 5, MAX_METADATA, False))
    assert state.get("g", "orders", 0) == CommittedOffset(7, 2, "", NOW + 5, -1)


def test_tombstones_remove_offsets_and_then_the_group() -> None:
    state = OffsetsState()
    apply(state, commit(state, request(part(0, 1), part(1, 2)), NOW, MAX_METADATA, False))
    apply(state, commit(state, request(part(0, 3), group="other"), NOW, MAX_METADATA, False))
    key0 = OffsetCommitKey(group="g", topic="orders", partition=0)
    key1 = OffsetCommitKey(group="g", topic="orders", partition=1)
    apply(state, Result([(key0, None)]))
    assert state.get("g", "orders", 0) is None
    assert state.group("g") == {("orders", 1): CommittedOffset(2, -1, "", NOW, -1)}
    assert state.has_offsets("g")
    apply(state, Result([(key1, None)]))
    assert not state.has_offsets("g")
    assert sorted(state.groups()) == ["other"]
    assert state.group("g") == {}
    # a tombstone for something never committed is harmless
    apply(state, Result([(OffsetCommitKey(group="nobody", topic="t", partition=0), None)]))
    apply(state, Result([(key0, None)]))
    assert sorted(state.groups()) == ["other"]
    assert state.get("other", "orders", 0) is not None


def test_a_commit_after_a_tombstone_is_back() -> None:
    state = OffsetsState()
    key = OffsetCommitKey(group="g", topic="orders", partition=0)
    apply(state, commit(state, request(part(0, 1)), NOW, MAX_METADATA, False))
    apply(state, Result([(key, None)]))
    apply(state, commit(state, request(part(0, 9)), NOW, MAX_METADATA, False))
    assert state.get("g", "orders", 0) == CommittedOffset(9, -1, "", NOW, -1)


def test_fetch_named_partitions_and_all() -> None:
    state = OffsetsState()
    apply(state, commit(state, request(part(0, 1), part(2, 3), part(0, 5, topic="audit")),
                        NOW, MAX_METADATA, False))
    apply(state, commit(state, request(part(0, 99), group="other"), NOW, MAX_METADATA, False))
    assert fetch(state, "g", [("orders", 0), ("orders", 1)]) == {
        ("orders", 0): CommittedOffset(1, -1, "", NOW, -1)}
    assert set(fetch(state, "g", None)) == {("orders", 0), ("orders", 2), ("audit", 0)}
    assert fetch(state, "unknown", None) == {}
    assert fetch(state, "unknown", [("orders", 0)]) == {}
    # what fetch returns is a copy: changing it does not change the state
    everything = fetch(state, "g", None)
    everything.clear()
    assert len(fetch(state, "g", None)) == 3
