"""A partition log: append, read, offsets, recovery, retention, producer state."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.topiclog import BatchError, LogConfig, PartitionLog
from coordinator.topiclog.batch import read_header
from protocol import ErrorCode
from tests.unit.topiclog_helpers import make_batch, set_field

CONFIG = LogConfig()


def open_log(tmp_path: Path) -> PartitionLog:
    return PartitionLog.open(tmp_path / "t-0", "t", 0)


def files_state(plog: PartitionLog) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted(plog.directory.glob("*.log"))]


def test_append_assigns_offsets_and_reads_back(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    first = plog.append(make_batch([b"a", b"b"]), CONFIG, 0)
    second = plog.append(make_batch([b"c"]), CONFIG, 0)
    assert (first.base_offset, first.last_offset) == (0, 1)
    assert (second.base_offset, second.last_offset) == (2, 2)
    assert plog.log_end_offset == plog.high_watermark == 3 and plog.log_start_offset == 0
    data = plog.read(0, 1 << 20, True)
    first_header = read_header(data)
    assert first_header.base_offset == 0
    assert read_header(data, first_header.size).base_offset == 2
    # a fetch from inside a batch returns that whole batch
    assert read_header(plog.read(1, 1 << 20, True)).base_offset == 0
    assert plog.read(2, 1 << 20, True) == data[first_header.size:]
    assert plog.read(3, 1 << 20, True) == b""


def test_read_respects_max_bytes_but_returns_one_batch(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    for _ in range(3):
        plog.append(make_batch([b"x" * 100]), CONFIG, 0)
    one = len(plog.read(0, 1, True))
    assert one == read_header(plog.read(0, 1, True)).size
    assert plog.read(0, 1, False) == plog.read(0, 1, True)[:1]  # a partial batch, as Kafka
    assert len(plog.read(0, one * 2 + 1, False)) == one * 2


@pytest.mark.parametrize("damage", ["crc", "count", "truncated", "empty"])
def test_corrupt_batches_leave_the_log_unchanged(tmp_path: Path, damage: str) -> None:
    plog = open_log(tmp_path)
    plog.append(make_batch([b"a"]), CONFIG, 0)
    before = files_state(plog)
    batch = bytearray(make_batch([b"b", b"c"]))
    if damage == "crc":
        batch[-2] ^= 1
    elif damage == "count":
        batch = bytearray(set_field(set_field(bytes(batch), 57, ">i", 3), 23, ">i", 2))
    elif damage == "truncated":
        batch = batch[:-5]
    else:
        batch = bytearray()
    with pytest.raises(BatchError) as err:
        plog.append(bytes(batch), CONFIG, 0)
    expected = ErrorCode.invalid_record if damage == "empty" else ErrorCode.corrupt_message
    assert err.value.code == expected
    assert files_state(plog) == before and plog.log_end_offset == 1


def test_too_large_and_two_batches_are_refused(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    batch = make_batch([b"x" * 500])
    with pytest.raises(BatchError) as err:
        plog.append(batch, LogConfig(max_message_bytes=100), 0)
    assert err.value.code == ErrorCode.message_too_large
    with pytest.raises(BatchError) as err:
        plog.append(batch + batch, CONFIG, 0)
    assert err.value.code == ErrorCode.invalid_record
    assert plog.log_end_offset == 0


def test_log_append_time(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    result = plog.append(make_batch([b"a"], timestamp=5), LogConfig(log_append_time=True),
                         777)
    assert result.log_append_time_ms == 777
    header = read_header(plog.read(0, 1 << 20, True))
    assert header.is_log_append_time and header.max_timestamp == 777


def test_recovery_truncates_a_torn_tail(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    plog.append(make_batch([b"a", b"b"]), CONFIG, 0)
    plog.append(make_batch([b"c"]), CONFIG, 0)
    good = plog.read(0, 1 << 20, True)
    plog.close()
    segment = tmp_path / "t-0" / f"{0:020d}.log"
    with open(segment, "ab") as out:
        out.write(make_batch([b"torn", b"tail"])[:-7])
    reopened = open_log(tmp_path)
    assert reopened.log_end_offset == 3
    assert segment.read_bytes() == good
    assert reopened.append(make_batch([b"d"]), CONFIG, 0).base_offset == 3


def test_recovery_cuts_at_a_bad_crc_and_drops_later_segments(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    small = LogConfig(segment_bytes=200)
    for i in range(6):
        plog.append(make_batch([b"x" * 60 + bytes([i])]), small, 0)
    assert len(plog.segments) > 2
    first = plog.segments[0].path
    plog.close()
    data = bytearray(first.read_bytes())
    data[-3] ^= 0xFF  # damage the last batch of the first segment
    first.write_bytes(bytes(data))
    reopened = open_log(tmp_path)
    assert len(reopened.segments) == 1
    assert reopened.log_end_offset == len(reopened.segments[0].positions)


def test_segments_roll_and_retention_by_size(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    config = LogConfig(segment_bytes=300, retention_bytes=400)
    for i in range(10):
        plog.append(make_batch([b"x" * 100 + bytes([i])]), config, 0)
    assert len(plog.segments) >= 4
    size_before = plog.size_bytes
    deleted = plog.delete_old_segments(0, config)
    assert deleted > 0 and plog.log_start_offset > 0
    assert plog.size_bytes <= size_before and plog.size_bytes - plog.segments[0].size < 400
    assert plog.log_end_offset == 10
    assert read_header(plog.read(plog.log_start_offset, 1 << 20, True)).base_offset == \
        plog.log_start_offset
    assert plog.read(0, 1 << 20, True) == b""  # below the log start offset


def test_retention_by_time_rolls_the_active_segment(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    config = LogConfig(retention_ms=1000)
    plog.append(make_batch([b"old"], timestamp=1_000), config, 0)
    plog.append(make_batch([b"old2"], timestamp=1_500), config, 0)
    assert plog.delete_old_segments(2_000, config) == 0
    assert plog.delete_old_segments(10_000, config) == 1
    assert plog.log_start_offset == plog.log_end_offset == 2
    reopened_dir = sorted(p.name for p in plog.directory.glob("*.log"))
    assert reopened_dir == [f"{2:020d}.log"]
    plog.close()
    assert open_log(tmp_path).log_start_offset == 2


def test_idempotent_producer_sequences(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    first = plog.append(make_batch([b"a", b"b"], producer_id=5, epoch=0, sequence=0), CONFIG, 0)
    retry = plog.append(make_batch([b"a", b"b"], producer_id=5, epoch=0, sequence=0), CONFIG, 0)
    assert retry.duplicate and retry.base_offset == first.base_offset == 0
    assert plog.log_end_offset == 2
    with pytest.raises(BatchError) as err:
        plog.append(make_batch([b"c"], producer_id=5, epoch=0, sequence=5), CONFIG, 0)
    assert err.value.code == ErrorCode.out_of_order_sequence_number
    plog.append(make_batch([b"c"], producer_id=5, epoch=0, sequence=2), CONFIG, 0)
    with pytest.raises(BatchError) as err:
        plog.append(make_batch([b"d"], producer_id=5, epoch=1, sequence=3), CONFIG, 0)
    assert err.value.code == ErrorCode.out_of_order_sequence_number
    plog.append(make_batch([b"d"], producer_id=5, epoch=1, sequence=0), CONFIG, 0)
    with pytest.raises(BatchError) as err:
        plog.append(make_batch([b"e"], producer_id=5, epoch=0, sequence=3), CONFIG, 0)
    assert err.value.code == ErrorCode.invalid_producer_epoch
    assert plog.log_end_offset == 4
    plog.close()
    # the producer state is rebuilt from the log
    reopened = open_log(tmp_path)
    dup = reopened.append(make_batch([b"d"], producer_id=5, epoch=1, sequence=0), CONFIG, 0)
    assert dup.duplicate and dup.base_offset == 3


def test_offsets_by_timestamp(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    plog.append(make_batch([b"a", b"b", b"c"], timestamps=[100, 300, 200]), CONFIG, 0)
    plog.append(make_batch([b"d"], timestamps=[250]), CONFIG, 0)
    assert plog.offset_for_timestamp(0) == (100, 0)
    assert plog.offset_for_timestamp(150) == (300, 1)
    assert plog.offset_for_timestamp(301) is None
    assert plog.max_timestamp() == (300, 1)


def test_empty_log_offsets(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    assert plog.max_timestamp() is None and plog.offset_for_timestamp(0) is None
    assert plog.read(0, 100, True) == b""


async def test_sync_makes_appends_durable(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    plog.append(make_batch([b"a"]), CONFIG, 0)
    assert plog.dirty
    await plog.sync(plog.log_end_offset)
    assert not plog.dirty
