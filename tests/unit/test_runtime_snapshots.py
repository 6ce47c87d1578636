"""Snapshots in the runtime, on a real store in a tmp dir with the real shard and a manual clock:
a partition snapshots once enough record bytes were appended, loads from its newest snapshot and
the log after it, and ignores (with a log line) a snapshot that is damaged or of another
version, falling back to an older one or to the whole log."""

from __future__ import annotations

import struct
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from coordinator.groups.replay import new_shard
from coordinator.runtime import CoordinatorRuntime, Result
from coordinator.runtime.clock import ManualClock
from storage import snapshot
from storage.log import PartitionLog
from storage.records import (
    GroupConfigKey,
    GroupConfigValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
)
from tests.unit.test_snapshot_replay import state_of

pytestmark = pytest.mark.timeout(60)
PARTITION = 0


def commits(group: str, n: int, base: int) -> Result:
    records: list[tuple[Any, Any]] = [
        (OffsetCommitKey(group=group, topic="orders", partition=p),
         OffsetCommitValue(offset=base + p, commit_timestamp=1_000, topic_id=uuid.UUID(int=7)))
        for p in range(n)]
    return Result(records)


def writing(result: Result) -> Callable[[Any, int], Result]:
    return lambda shard, now: result


async def started(log_dir: Path, **kwargs: Any) -> CoordinatorRuntime:
    runtime = CoordinatorRuntime(log_dir, 1, new_shard, ManualClock(1_000_000), **kwargs)
    await runtime.start(drive_timers=False)
    await runtime.wait_loaded()
    return runtime


def full_replay(log_dir: Path) -> Any:
    """The state every record of the log gives, replayed one by one (no snapshot)."""
    shard = new_shard(PARTITION)
    with PartitionLog.open(log_dir, PARTITION) as plog:
        for offset, _ts, key, value in plog.read():
            shard.replay(offset, *decode_record(key, value))
    shard.on_loaded(1_000_000)
    return state_of(shard)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Path]:
    """A partition with two snapshots (written by the runtime as records were appended) and
    records after the newest one."""
    runtime = await started(tmp_path, snapshot_max_bytes=4_000)
    try:
        for round_ in range(12):
            await runtime.write(PARTITION, writing(commits(f"g{round_ % 3}", 20, round_ * 100)))
            await runtime.write(PARTITION, writing(Result([
                (GroupConfigKey(group_id=f"g{round_ % 3}"),
                 None if round_ % 4 == 3 else GroupConfigValue(
                     configs={"consumer.session.timeout.ms": str(45_000 + round_)}))])))
        written = await runtime.snapshot(PARTITION)
        assert written is not None
        await runtime.write(PARTITION, lambda s, now: commits("g9", 5, 7))  # the tail
    finally:
        await runtime.stop()
    assert len(snapshot.snapshot_files(tmp_path / "__consumer_offsets-0")) == snapshot.KEEP
    yield tmp_path


def files(log_dir: Path) -> list[Path]:
    return [path for _, path in snapshot.snapshot_files(log_dir / "__consumer_offsets-0")]


async def test_snapshots_are_written_as_records_are_appended_and_loaded_with_the_tail(
        store: Path) -> None:
    newest = files(store)[0]
    runtime = await started(store)
    try:
        partition = runtime.partitions[PARTITION]
        assert partition.snapshot == newest
        assert partition.snapshot_end < partition.appended  # the tail came from the log
        assert state_of(partition.shard) == full_replay(store)
        assert partition.shard.offsets  # not trivially equal
    finally:
        await runtime.stop()


@pytest.mark.parametrize("damage", ["a flipped byte", "another version", "truncated"])
async def test_a_damaged_snapshot_is_ignored_with_a_log_line(store: Path, damage: str) -> None:
    newest, older = files(store)
    data = bytearray(newest.read_bytes())
    if damage == "a flipped byte":
        data[len(data) // 2] ^= 0xFF
    elif damage == "another version":
        struct.pack_into(">H", data, 8, snapshot.VERSION + 1)
    else:
        del data[-7:]
    newest.write_bytes(bytes(data))
    with capture_logs() as logs:
        runtime = await started(store)
    try:
        partition = runtime.partitions[PARTITION]
        ignored = [e for e in logs if e["event"] == "snapshot_ignored"]
        assert [e["path"] for e in ignored] == [str(newest)]
        expected = {"a flipped byte": "CRC32C", "another version": "version",
                    "truncated": "CRC32C"}[damage]
        assert expected in ignored[0]["reason"]
        assert partition.snapshot == older  # the older one, then a longer tail
        assert state_of(partition.shard) == full_replay(store)
    finally:
        await runtime.stop()


async def test_without_a_valid_snapshot_the_whole_log_is_replayed(store: Path) -> None:
    for path in files(store):
        path.write_bytes(b"KCSN" + bytes(40))
    (store / "__consumer_offsets-0" / (snapshot.snapshot_name(10) + ".part")).write_bytes(b"x")
    with capture_logs() as logs:
        runtime = await started(store)
    try:
        partition = runtime.partitions[PARTITION]
        assert len([e for e in logs if e["event"] == "snapshot_ignored"]) == snapshot.KEEP
        assert [e["event"] for e in logs if e["event"] == "snapshot_part_removed"] == [
            "snapshot_part_removed"]
        assert partition.snapshot is None
        assert state_of(partition.shard) == full_replay(store)
        # and the next snapshot starts from the whole log
        await runtime.write(PARTITION, lambda s, now: commits("g1", 3, 500))
        written = await runtime.snapshot(PARTITION)
        assert written is not None and written.name == snapshot.snapshot_name(partition.durable)
    finally:
        await runtime.stop()
    runtime = await started(store)
    try:
        assert state_of(runtime.partitions[PARTITION].shard) == full_replay(store)
    finally:
        await runtime.stop()
