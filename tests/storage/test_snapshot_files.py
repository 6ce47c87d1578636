"""Snapshot files and the log around them: a snapshot taken from the log (or from the previous
snapshot and the log after it) holds what compaction would keep; an open from its recovery
point still truncates a torn tail after it, and scans the whole log when the point does not
hold; compaction keeps the tombstones a snapshot does not cover."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from storage import snapshot
from storage.compaction import compact
from storage.log import PartitionLog, RecoveryPoint, partition_dir

from .helpers import commit, tombstone


def latest(records: list[tuple[int, int, bytes, bytes | None]]) -> dict[bytes, bytes | None]:
    view: dict[bytes, bytes | None] = {}
    for _, _, key, value in records:
        view[key] = value
    return view


def test_a_snapshot_holds_the_latest_record_per_key_and_builds_on_the_previous(
        tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path, 0, segment_bytes=400) as plog:
        for i in range(30):
            plog.append_batch([commit("g", i % 3, i), commit("h", i % 2, i)], 1_000 + i)
        plog.append_batch([tombstone("h", 0)], 2_000)
        first = snapshot.take(plog, plog.next_offset, now_ms=3_000)
        assert latest(first.records) == latest(list(plog.read()))
        assert len(first.records) == 5  # g 0..2, h 1 and h 0's tombstone
        for i in range(5):
            plog.append_batch([commit("g", 0, 100 + i)], 4_000)
        end = plog.next_offset
        plog.append_batch([commit("g", 1, 999)], 4_000)  # past the end: not in it
        second = snapshot.take(plog, end, base=first.path, now_ms=5_000)
        assert latest(second.records) == latest([r for r in plog.read() if r[0] < end])
        assert snapshot.newest(plog.directory, 0) == second
        # the previous one is kept, older ones go
        assert [p for _, p in snapshot.snapshot_files(plog.directory)] == [second.path,
                                                                           first.path]
        # a tombstone past its retention is not carried into the next snapshot
        third = snapshot.take(plog, plog.next_offset, base=second.path,
                              tombstone_retention_ms=1_000, now_ms=10_000)
        assert all(value is not None for _, _, _, value in third.records)


def test_an_open_from_a_recovery_point_truncates_a_torn_tail_after_it(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path, 0, segment_bytes=300) as plog:
        for i in range(20):
            plog.append_batch([commit("g", i % 3, i)], 1_000)
        taken = snapshot.take(plog, plog.next_offset)
        plog.append_batch([commit("g", 0, 50)], 1_000)
        plog.flush()
        active = plog.segments()[-1].path
        end = plog.next_offset
    assert taken.recovery_point is not None and taken.recovery_point.segment > 0
    with open(active, "ab") as f:
        f.write(b"\x00\x00\x01torn")
    with capture_logs() as logs:
        reopened = PartitionLog.open(tmp_path, 0, segment_bytes=300,
                                     recovery_point=taken.recovery_point)
    with reopened:
        assert reopened.next_offset == end
        assert [e["event"] for e in logs] == ["log_tail_truncated"]
        assert reopened.size_bytes == sum(s.path.stat().st_size for s in reopened.segments())


def test_a_recovery_point_that_does_not_hold_means_a_full_scan(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path, 0) as plog:
        for i in range(10):
            plog.append_batch([commit("g", i % 3, i)], 1_000)
        end = plog.next_offset
    with capture_logs() as logs:
        reopened = PartitionLog.open(tmp_path, 0, recovery_point=RecoveryPoint(0, 7, 4))
    with reopened:
        assert reopened.next_offset == end
        assert [e["event"] for e in logs] == ["recovery_point_ignored"]
        assert len(list(reopened.read())) == 10


def test_compaction_keeps_tombstones_a_snapshot_does_not_cover(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path, 0, segment_bytes=200) as plog:
        plog.append_batch([commit("g", 0, 1), commit("g", 1, 1)], 1_000)
        snapshot.take(plog, plog.next_offset, now_ms=1_000)  # holds g-0's value
        plog.append_batch([tombstone("g", 0)], 1_000)  # an old tombstone, after the snapshot
        plog.append_batch([tombstone("g", 1)], 1_000)
        for i in range(10):  # close the segments holding them
            plog.append_batch([commit("z", i, i)], 1_000)
        compact(plog, tombstone_retention_ms=10, now_ms=100_000)
        kept = latest(list(plog.read()))
        assert kept[commit("g", 0, 0)[0]] is None  # still there: the snapshot needs it
        # loaded as a start loads it, g-0 and g-1 are gone
        found = snapshot.load(plog)
        assert found is not None
        state = latest(found.records + list(plog.read(found.end_offset)))
        assert state.get(commit("g", 0, 0)[0]) is None
        assert state.get(commit("g", 1, 0)[0]) is None
    assert partition_dir(tmp_path, 0).is_dir()
