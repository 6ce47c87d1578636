"""PartitionLog and Store: append, read, reopen, roll, torn tails, corruption, full disks."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from storage import segment
from storage.errors import CorruptLogError, LogFailedError, StoreFullError
from storage.framing import HEADER_SIZE
from storage.log import PartitionLog, partition_dir
from storage.store import Store

from .helpers import commit, tombstone


def records_of(
    plog: PartitionLog, from_offset: int = 0
) -> list[tuple[int, int, bytes, bytes | None]]:
    return list(plog.read(from_offset))


def test_append_read_reopen(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path, 7)
    assert plog.next_offset == 0
    assert plog.append_batch([commit("g", 0, 10), commit("g", 1, 11)], 1000) == 1
    assert plog.append_batch([tombstone("g", 0)], 2000) == 2
    assert plog.flush() == 3
    before = records_of(plog)
    assert [(o, ts) for o, ts, _, _ in before] == [(0, 1000), (1, 1000), (2, 2000)]
    assert before[2][3] is None
    assert before[0][2:] == commit("g", 0, 10)
    plog.close()
    assert (tmp_path / "__consumer_offsets-7" / "00000000000000000000.log").is_file()

    again = PartitionLog.open(tmp_path, 7)
    assert again.next_offset == 3
    assert records_of(again) == before
    assert records_of(again, 2) == before[2:]
    assert again.append_batch([commit("g", 2, 12)], 3000) == 3
    again.close()


def test_empty_batch_rejected(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path, 0) as plog, pytest.raises(ValueError):
        plog.append_batch([], 0)


def test_segments_roll_at_size(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path, 0, segment_bytes=400)
    expected = []
    for i in range(30):
        rec = commit("g", i % 3, i)
        plog.append_batch([rec], i)
        expected.append((i, i, *rec))
    segs = plog.segments()
    assert len(segs) > 5
    assert all(s.size <= 400 for s in segs)
    assert [s.path.name for s in segs] == [f"{s.base_offset:020d}.log" for s in segs]
    assert records_of(plog) == expected
    assert records_of(plog, 17) == expected[17:]
    plog.close()
    with PartitionLog.open(tmp_path, 0, segment_bytes=400) as again:
        assert records_of(again) == expected
        assert again.next_offset == 30


def test_batch_larger_than_a_segment_gets_its_own(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path, 0, segment_bytes=100) as plog:
        plog.append_batch([commit("g", i, i) for i in range(10)], 1)
        plog.append_batch([commit("g", 0, 99)], 2)
        assert [s.base_offset for s in plog.segments()] == [0, 10]
        assert len(records_of(plog)) == 11


def _active_file(tmp_path: Path, partition: int = 0) -> Path:
    return sorted(partition_dir(tmp_path, partition).glob("*.log"))[-1]


def _fill(tmp_path: Path, n: int = 5, segment_bytes: int = 1 << 20) -> list[tuple]:
    with PartitionLog.open(tmp_path, 0, segment_bytes=segment_bytes) as plog:
        for i in range(n):
            plog.append_batch([commit("g", i, i), commit("h", i, i)], i)
        plog.flush()
        return records_of(plog)


@pytest.mark.parametrize(
    "junk",
    [b"\x00", b"garbage that is not a batch at all" * 3, b"\x00" * 4096, os.urandom(1000)],
    ids=["one-byte", "text", "zeros", "random"],
)
def test_junk_tail_is_truncated(tmp_path: Path, junk: bytes) -> None:
    good = _fill(tmp_path)
    path = _active_file(tmp_path)
    size = path.stat().st_size
    with path.open("ab") as fh:
        fh.write(junk)
    with PartitionLog.open(tmp_path, 0) as plog:
        assert records_of(plog) == good
        assert plog.recovery.truncated_bytes == len(junk)
        assert path.stat().st_size == size
        assert plog.append_batch([commit("g", 0, 100)], 100) == 10
    with PartitionLog.open(tmp_path, 0) as plog:
        assert len(records_of(plog)) == 11


@pytest.mark.parametrize("cut", [1, HEADER_SIZE - 1, HEADER_SIZE, HEADER_SIZE + 5, -1])
def test_partial_batch_is_truncated(tmp_path: Path, cut: int) -> None:
    good = _fill(tmp_path)
    path = _active_file(tmp_path)
    size = path.stat().st_size
    with PartitionLog.open(tmp_path, 0) as plog:
        plog.append_batch([commit("late", 0, 1), commit("late", 1, 2)], 99)
    full = path.stat().st_size - size
    os.truncate(path, size + (cut if cut > 0 else full + cut))
    with PartitionLog.open(tmp_path, 0) as plog:
        assert records_of(plog) == good  # the torn batch is gone whole
        assert plog.next_offset == 10
        assert plog.recovery.truncate_reason is not None


def test_bad_crc_in_last_batch_is_truncated(tmp_path: Path) -> None:
    good = _fill(tmp_path)
    path = _active_file(tmp_path)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with PartitionLog.open(tmp_path, 0) as plog:
        assert records_of(plog) == good[:-2]
        assert plog.recovery.truncate_reason == "CRC32C mismatch"


def test_corruption_in_the_middle_raises(tmp_path: Path) -> None:
    _fill(tmp_path)
    path = _active_file(tmp_path)
    data = bytearray(path.read_bytes())
    data[HEADER_SIZE + 3] ^= 0x01  # inside the first batch; good batches follow
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match="partition 0") as info:
        PartitionLog.open(tmp_path, 0)
    assert info.value.position == 0
    assert path.read_bytes() == bytes(data)  # nothing was truncated


def test_corruption_in_an_older_segment_raises(tmp_path: Path) -> None:
    _fill(tmp_path, n=20, segment_bytes=300)
    first = sorted(partition_dir(tmp_path, 0).glob("*.log"))[0]
    with first.open("ab") as fh:  # even a "torn tail" of a closed segment is corruption
        fh.write(b"\x00\x00")
    with pytest.raises(CorruptLogError):
        PartitionLog.open(tmp_path, 0, segment_bytes=300)


def test_failed_write_leaves_no_partial_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plog = PartitionLog.open(tmp_path, 0)
    plog.append_batch([commit("g", 0, 1)], 1)
    size = plog.size_bytes
    real = os.pwrite

    def half_then_enospc(fd: int, data: bytes, offset: int) -> int:
        if offset == size:  # first call: write half of the batch
            return real(fd, bytes(data)[: len(data) // 2], offset)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(segment, "_pwrite", half_then_enospc)
    with pytest.raises(OSError) as info:
        plog.append_batch([commit("g", 1, 2), commit("g", 2, 3)], 2)
    assert info.value.errno == errno.ENOSPC
    assert plog.size_bytes == size
    assert _active_file(tmp_path).stat().st_size == size
    assert plog.next_offset == 1
    monkeypatch.setattr(segment, "_pwrite", real)
    assert plog.append_batch([commit("g", 3, 4)], 3) == 1  # the log keeps working
    plog.close()
    with PartitionLog.open(tmp_path, 0) as again:
        assert [o for o, *_ in records_of(again)] == [0, 1]
        assert again.recovery.truncated_bytes == 0


def test_failed_truncate_marks_log_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plog = PartitionLog.open(tmp_path, 0)

    def eio(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.EIO, "I/O error")

    def no_truncate(fd: int, size: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(segment, "_pwrite", eio)
    monkeypatch.setattr(segment.os, "ftruncate", no_truncate)
    with pytest.raises(LogFailedError):
        plog.append_batch([commit("g", 0, 1)], 1)
    monkeypatch.undo()
    assert plog.failed is not None
    with pytest.raises(LogFailedError):
        plog.append_batch([commit("g", 0, 1)], 1)
    plog.close()


def test_size_cap_raises_and_keeps_acknowledged_data(tmp_path: Path) -> None:
    store = Store.open(tmp_path, num_partitions=3, max_bytes=2000)
    acked: dict[int, list[int]] = {0: [], 1: [], 2: []}
    failures = 0
    for i in range(200):
        p = i % 3
        try:
            offset = store.partition(p).append_batch([commit(f"g{i}", 0, i)], i)
        except OSError as exc:
            assert isinstance(exc, StoreFullError)
            assert exc.errno == errno.ENOSPC
            failures += 1
            continue
        store.flush([p])
        acked[p].append(offset)
    assert failures > 0
    assert store.size_bytes <= 2000
    for p in range(3):
        assert [o for o, *_ in store.partition(p).read()] == acked[p]
    store.close()
    with Store.open(tmp_path, num_partitions=3) as again:
        for p in range(3):
            assert [o for o, *_ in again.partition(p).read()] == acked[p]


def test_store_reports_a_corrupt_partition_and_opens_the_others(tmp_path: Path) -> None:
    with Store.open(tmp_path, num_partitions=4) as store:
        for p in range(4):
            for i in range(3):
                store.partition(p).append_batch([commit("g", i, i)], i)
    path = _active_file(tmp_path, 2)
    data = bytearray(path.read_bytes())
    data[HEADER_SIZE + 1] ^= 0x10
    path.write_bytes(bytes(data))
    with Store.open(tmp_path, num_partitions=4) as store:
        assert set(store.errors) == {2}
        with pytest.raises(CorruptLogError):
            store.partition(2)
        assert len(list(store.partition(3).read())) == 3
        assert store.partition(0).recovery.load_time_ms >= 0


def test_read_snapshot_is_stable_while_appending(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path, 0, segment_bytes=200) as plog:
        for i in range(5):
            plog.append_batch([commit("g", i, i)], i)
        it = plog.read()
        first = next(it)
        for i in range(5, 10):
            plog.append_batch([commit("g", i, i)], i)
        rest = list(it)
        assert [first[0]] + [r[0] for r in rest] == [0, 1, 2, 3, 4]


def test_read_batches_continues_where_a_reader_stopped(tmp_path: Path) -> None:
    from storage.compaction import compact

    plog = PartitionLog.open(tmp_path, 3, segment_bytes=600)
    for i in range(30):
        plog.append_batch([commit("g", i % 3, i)], 1000 + i)
    plog.flush()
    everything = records_of(plog)
    reader = plog.read_batches(0)
    first = [next(reader) for _ in range(5)]
    reader.close()  # remembered: the batch it got last
    remembered = plog._read_position(first[-1][0].offset)
    assert remembered == first[-1][0] and remembered.position > 0
    # a reader from the next offset starts at that batch, and reads what a full read reads
    after = [r for _, records in plog.read_batches(remembered.offset + 1) for r in records]
    assert after == [r for r in everything if r[0] > remembered.offset]
    # a compaction swaps the segment's file: the remembered position is not trusted
    compact(plog, 0, 10_000)
    again = [r for _, records in plog.read_batches(remembered.offset + 1) for r in records]
    assert again == [r for r in records_of(plog) if r[0] > remembered.offset]
    plog.close()


def test_read_batches_reads_a_batch_larger_than_a_chunk(tmp_path: Path) -> None:
    from storage.log import READ_CHUNK

    plog = PartitionLog.open(tmp_path, 4)
    plog.append_batch([commit("g", 0, 1)], 1000)
    plog.append_batch([(b"big-key", b"x" * (READ_CHUNK + 1000))], 1001)
    plog.append_batch([commit("g", 0, 2)], 1002)
    plog.flush()
    for start in (0, 1, 2):
        got = [r for _, records in plog.read_batches(start) for r in records]
        assert got == records_of(plog, start)
    plog.close()
