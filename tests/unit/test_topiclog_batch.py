"""Record batch v2 validation and the leader's rewrites."""

from __future__ import annotations

import pytest

from coordinator.topiclog.batch import (
    BatchError,
    assign,
    compute_crc,
    read_header,
    record_timestamps,
    split_batches,
    validate,
)
from protocol import ErrorCode
from tests.unit.topiclog_helpers import make_batch, set_field


def test_valid_batch_header() -> None:
    batch = make_batch([b"a", b"b", b"c"])
    header = validate(batch)
    assert header.count == 3 and header.last_offset_delta == 2 and header.magic == 2
    assert split_batches(batch) == [(0, len(batch))]


def test_bad_crc_is_corrupt_message() -> None:
    batch = bytearray(make_batch([b"a"]))
    batch[-1] ^= 0xFF
    with pytest.raises(BatchError) as err:
        validate(bytes(batch))
    assert err.value.code == ErrorCode.corrupt_message


def test_count_larger_than_records_is_corrupt_message() -> None:
    batch = make_batch([b"a", b"b"])
    batch = set_field(batch, 57, ">i", 3)  # recordsCount
    batch = set_field(batch, 23, ">i", 2)  # lastOffsetDelta, consistent with the count
    with pytest.raises(BatchError) as err:
        validate(batch)
    assert err.value.code == ErrorCode.corrupt_message


def test_count_smaller_than_records_is_corrupt_message() -> None:
    batch = make_batch([b"a", b"b", b"c"])
    batch = set_field(batch, 57, ">i", 2)
    batch = set_field(batch, 23, ">i", 1)
    with pytest.raises(BatchError) as err:
        validate(batch)
    assert err.value.code == ErrorCode.corrupt_message


def test_count_inconsistent_with_offset_range_is_invalid_record() -> None:
    batch = set_field(make_batch([b"a", b"b"]), 57, ">i", 5)
    with pytest.raises(BatchError) as err:
        validate(batch)
    assert err.value.code == ErrorCode.invalid_record


def test_truncated_batch_is_corrupt_message() -> None:
    batch = make_batch([b"a", b"b"])
    with pytest.raises(BatchError) as err:
        split_batches(batch[:-3])
    assert err.value.code == ErrorCode.corrupt_message
    with pytest.raises(BatchError):
        split_batches(batch[:8])


def test_old_magic_is_refused() -> None:
    batch = set_field(make_batch([b"a"]), 16, ">b", 1, fix_crc=False)
    with pytest.raises(BatchError) as err:
        split_batches(batch)
    assert err.value.code == ErrorCode.invalid_record


def test_idempotent_batch_without_sequence_is_invalid() -> None:
    batch = make_batch([b"a"], producer_id=7, epoch=0, sequence=0)
    batch = set_field(batch, 53, ">i", -1)
    with pytest.raises(BatchError) as err:
        validate(batch)
    assert err.value.code == ErrorCode.invalid_record


def test_assign_keeps_crc_for_create_time() -> None:
    batch = make_batch([b"a", b"b"])
    stored = assign(batch, 42, 0, None)
    header = read_header(stored)
    assert header.base_offset == 42 and header.crc == read_header(batch).crc
    assert stored[12:] == batch[12:]  # only base offset (and leader epoch) differ


def test_assign_log_append_time_rewrites_max_timestamp_and_crc() -> None:
    batch = make_batch([b"a", b"b"], timestamp=5)
    stored = assign(batch, 0, 0, 99_999)
    header = read_header(stored)
    assert header.is_log_append_time and header.max_timestamp == 99_999
    assert header.crc == compute_crc(stored) != read_header(batch).crc
    assert [ts for _, ts in record_timestamps(stored, header)] == [99_999, 99_999]


def test_record_timestamps() -> None:
    batch = assign(make_batch([b"a", b"b", b"c"], timestamps=[10, 30, 20]), 100, 0, None)
    header = read_header(batch)
    assert list(record_timestamps(batch, header)) == [(100, 10), (101, 30), (102, 20)]
