"""Segment files of topic logs: a bounded, process-wide LRU of open descriptors, and the first
segment file of a partition created only by its first append."""

from __future__ import annotations

import asyncio
import errno
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import storage.segment
from coordinator.config import ServerConfig
from coordinator.metadata.image import MetadataImage
from coordinator.runtime.clock import ManualClock
from coordinator.topiclog import LogConfig, PartitionLog, TopicLogs
from coordinator.topiclog.batch import read_header
from coordinator.topiclog.partition import PARTITION_METADATA
from coordinator.topiclog.segment import FILES
from tests.unit.topiclog_helpers import make_batch

CAP = 8
SLACK = 2  # listdir's own descriptor, and one for luck


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def segment_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("*.log"))


@pytest.fixture
def small_cache() -> Iterator[None]:
    """Caps the cache at CAP descriptors for the test."""
    before = FILES.capacity
    FILES.resize(CAP)
    yield
    FILES.resize(before)


def extra_fds() -> Callable[[], int]:
    """A function giving how many descriptors the process has open beyond those it had now,
    not counting the ones the cache holds now (the cache may close those)."""
    baseline = open_fds() - len(FILES)
    return lambda: open_fds() - baseline


def open_partition(root: Path, partition: int) -> PartitionLog:
    return PartitionLog.open(root / f"t-{partition}", "t", partition)


def value(partition: int, i: int) -> bytes:
    return b"p%d-v%d-" % (partition, i) + b"x" * 80


def batches_of(plog: PartitionLog) -> list[bytes]:
    """Every stored batch of the log, fetched segment by segment as a consumer would."""
    found: list[bytes] = []
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, 1 << 20, True)
        assert data
        pos = 0
        while pos < len(data):
            header = read_header(data, pos)
            found.append(data[pos:pos + header.size])
            pos += header.size
            offset = header.last_offset + 1
    return found


@pytest.mark.slow
async def test_many_partitions_stay_within_the_descriptor_cap(
        tmp_path: Path, small_cache: None) -> None:
    config = LogConfig(segment_bytes=400)  # a few batches a segment: several segments each
    partitions = 200
    rounds = 6
    extra = extra_fds()
    logs = [open_partition(tmp_path, p) for p in range(partitions)]
    assert extra() <= CAP + SLACK
    stored: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    for i in range(rounds):  # round-robin, so every append reopens an evicted descriptor
        for p, plog in enumerate(logs):
            result = plog.append(make_batch([value(p, i)]), config, 0)
            assert result.base_offset == i
            stored[p].append(plog.read(i, 1 << 20, True))
        assert extra() <= CAP + SLACK and len(FILES) <= CAP
    assert all(len(plog.segments) >= 2 for plog in logs)
    for p, plog in enumerate(logs):
        assert batches_of(plog) == stored[p]
        assert plog.log_end_offset == rounds
        assert value(p, rounds - 1) in plog.read(rounds - 1, 1 << 20, True)
    assert extra() <= CAP + SLACK
    for plog in logs[::7]:  # fsync goes through a dup of a descriptor the cache may evict
        await plog.sync(plog.log_end_offset)
        assert not plog.dirty
    for plog in logs:
        plog.close()
    assert len(FILES) == 0  # closing a log closes its cached descriptors

    reopened = [open_partition(tmp_path, p) for p in range(partitions)]
    assert extra() <= CAP + SLACK
    for p, plog in enumerate(reopened):
        assert plog.log_end_offset == rounds
        assert batches_of(plog) == stored[p]
        assert plog.append(make_batch([b"after"]), config, 0).base_offset == rounds
    assert extra() <= CAP + SLACK
    for plog in reopened:
        plog.delete_old_segments(0, LogConfig(retention_bytes=0, segment_bytes=400))
        assert plog.log_start_offset > 0
    assert extra() <= CAP + SLACK
    for plog in reopened:
        plog.close()


async def test_an_evicted_descriptor_does_not_disturb_an_fsync(
        tmp_path: Path, small_cache: None) -> None:
    plog = open_partition(tmp_path, 0)
    plog.append(make_batch([b"a"]), LogConfig(), 0)
    syncing = asyncio.ensure_future(plog.sync(plog.log_end_offset))
    for _ in range(3):  # the fsync task takes its dup and hands it to a thread
        await asyncio.sleep(0)
    others = [open_partition(tmp_path, p) for p in range(1, CAP + 3)]
    for other in others:
        other.append(make_batch([b"b"]), LogConfig(), 0)
    assert plog.active.file.fd == -1  # evicted
    await syncing
    assert not plog.dirty
    assert batches_of(plog) == [plog.read(0, 1 << 20, True)]
    for log in [plog, *others]:
        log.close()


async def test_a_new_partition_creates_no_segment_file_until_the_first_append(
        tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    fds = open_fds()
    plog = PartitionLog.open(directory, "t", 0, uuid.uuid4())
    assert (directory / PARTITION_METADATA).is_file()
    assert segment_files(directory) == []
    # reads, syncs and the empty-log lookups neither open nor create anything
    assert plog.log_start_offset == plog.log_end_offset == 0
    assert plog.read(0, 1 << 20, True) == b""
    assert plog.offset_for_timestamp(0) is None and plog.max_timestamp() is None
    assert plog.delete_old_segments(10**12, LogConfig(retention_ms=0, retention_bytes=0)) == 0
    await plog.sync(0)
    assert segment_files(directory) == [] and open_fds() == fds
    plog.close()

    # a restart finds only partition.metadata: an empty log at offset 0, still no file
    plog = PartitionLog.open(directory, "t", 0)
    assert plog.log_end_offset == 0 and segment_files(directory) == []
    plog.append(make_batch([b"first"]), LogConfig(), 0)
    assert segment_files(directory) == [f"{0:020d}.log"]
    assert plog.dirty
    await plog.sync(plog.log_end_offset)  # the new file and its directory entry are fsynced
    assert not plog.dirty
    plog.close()
    assert PartitionLog.open(directory, "t", 0).log_end_offset == 1


async def test_topic_logs_open_partitions_without_descriptors(tmp_path: Path) -> None:
    image = MetadataImage()
    config = ServerConfig.from_sources({"log.dirs": str(tmp_path)})
    logs = TopicLogs(tmp_path, image, config, ManualClock(1_000))
    fds = open_fds()
    topic = image.create_topic("many", 300)
    assert open_fds() == fds
    assert all((tmp_path / f"many-{p}" / PARTITION_METADATA).is_file() for p in range(300))
    assert not list(tmp_path.glob("many-*/*.log"))
    plog = logs.get("many", 7)
    assert plog is not None
    plog.append(make_batch([b"a"]), logs.log_config(topic), logs.now_ms())
    await logs.stop()  # fsyncs the one dirty log; creates nothing for the others
    assert [p.parent.name for p in tmp_path.glob("many-*/*.log")] == ["many-7"]
    assert not plog.dirty


def test_a_failed_topic_append_is_truncated_away(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    plog = open_partition(tmp_path, 0)
    plog.append(make_batch([b"a"]), LogConfig(), 0)
    size = plog.active.size
    real = os.pwrite

    def half_then_enospc(fd: int, data: bytes, offset: int) -> int:
        if offset == size:
            return real(fd, bytes(data)[: len(data) // 2], offset)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(storage.segment, "_pwrite", half_then_enospc)
    with pytest.raises(OSError):
        plog.append(make_batch([b"b"]), LogConfig(), 0)
    monkeypatch.setattr(storage.segment, "_pwrite", real)
    assert plog.active.size == size == plog.active.path.stat().st_size
    assert plog.append(make_batch([b"c"]), LogConfig(), 0).base_offset == 1
    plog.close()


def test_the_process_limit_below_the_cap_evicts_and_retries(
        tmp_path: Path, small_cache: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = open_partition(tmp_path, 0)
    first.append(make_batch([b"a"]), LogConfig(), 0)
    FILES.resize(1)
    FILES.resize(CAP)  # the cache holds only first's descriptor, far below its cap
    second = open_partition(tmp_path, 1)
    real = os.open
    failures = [OSError(errno.EMFILE, "Too many open files")]

    def open_once_full(path: str | Path, flags: int, mode: int = 0o777) -> int:
        if failures:
            raise failures.pop()
        return real(path, flags, mode)

    monkeypatch.setattr(os, "open", open_once_full)
    second.append(make_batch([b"b"]), LogConfig(), 0)
    monkeypatch.undo()
    assert first.active.file.fd == -1  # made room
    assert batches_of(first) == [first.read(0, 1 << 20, True)] and first.log_end_offset == 1
    assert second.log_end_offset == 1
    first.close()
    second.close()


def test_a_closed_log_does_not_reopen_its_files(tmp_path: Path) -> None:
    plog = open_partition(tmp_path, 0)
    plog.append(make_batch([b"a"]), LogConfig(), 0)
    plog.close()
    with pytest.raises(OSError) as info:
        plog.segments[0].read(0, 10)
    assert info.value.errno == errno.EBADF
