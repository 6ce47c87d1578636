"""PartitionLog with ``defer_writes``: batches reach the file in ``flush``, in order, across
segment rolls and concurrent appends; a failed write loses only unflushed batches and leaves
the log refusing writes until it is reopened."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from storage import segment
from storage.budget import SizeBudget
from storage.errors import LogFailedError
from storage.log import PartitionLog, partition_dir

from .helpers import commit


def on_disk(tmp_path: Path, partition: int = 0) -> int:
    return sum(p.stat().st_size for p in partition_dir(tmp_path, partition).glob("*.log"))


def offsets_after_reopen(tmp_path: Path, segment_bytes: int = 100 * 1024 * 1024) -> list[int]:
    with PartitionLog.open(tmp_path, 0, segment_bytes) as again:
        assert again.recovery.truncated_bytes == 0
        return [offset for offset, *_ in again.read()]


def test_appended_batches_reach_the_file_in_flush(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path, 0, defer_writes=True)
    assert plog.append_batch([commit("g", 0, 1), commit("g", 1, 2)], 1) == 1
    assert plog.append_batch([commit("g", 2, 3)], 2) == 2
    assert on_disk(tmp_path) == 0  # nothing written yet
    assert plog.size_bytes > 0  # but counted: the size cap sees them
    assert list(plog.read()) == []  # readers see what is in the file
    assert plog.flush() == 3
    assert on_disk(tmp_path) == plog.size_bytes
    assert [o for o, *_ in plog.read()] == [0, 1, 2]
    plog.close()
    assert offsets_after_reopen(tmp_path) == [0, 1, 2]


def test_rolling_writes_what_is_pending_to_the_old_segment_first(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path, 0, segment_bytes=400, defer_writes=True)
    for i in range(30):
        assert plog.append_batch([commit("g", i % 3, i)], i) == i
        if i % 7 == 6:
            assert plog.flush() == i + 1
    plog.flush()
    segments = plog.segments()
    assert len(segments) > 5
    assert all(s.size <= 400 for s in segments)
    assert [o for o, *_ in plog.read()] == list(range(30))
    plog.close()
    assert offsets_after_reopen(tmp_path, 400) == list(range(30))


def test_close_drops_what_was_not_flushed(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path, 0, defer_writes=True)
    plog.append_batch([commit("g", 0, 1)], 1)
    plog.flush()
    plog.append_batch([commit("g", 0, 2)], 2)
    plog.close()
    assert offsets_after_reopen(tmp_path) == [0]


def test_a_failed_write_loses_only_unflushed_batches_and_fails_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = SizeBudget()
    plog = PartitionLog.open(tmp_path, 0, defer_writes=True, budget=budget)
    plog.append_batch([commit("g", 0, 1)], 1)
    assert plog.flush() == 1
    durable_size = on_disk(tmp_path)
    plog.append_batch([commit("g", 1, 2)], 2)
    plog.append_batch([commit("g", 2, 3)], 3)
    real = os.pwrite

    def half_then_enospc(fd: int, data: bytes, offset: int) -> int:
        if offset == durable_size:  # first call: write half of what is pending
            return real(fd, bytes(data)[: len(data) // 2], offset)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(segment, "_pwrite", half_then_enospc)
    with pytest.raises(OSError) as info:
        plog.flush()
    assert info.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert on_disk(tmp_path) == durable_size  # the partial bytes were truncated away
    assert plog.failed is not None
    with pytest.raises(LogFailedError):
        plog.append_batch([commit("g", 3, 4)], 4)
    with pytest.raises(LogFailedError):
        plog.flush()
    # what the lost batches reserved is still counted, so releasing the log's size (what a
    # reload does before reopening) gives back exactly what the budget holds
    assert plog.size_bytes == budget.used
    plog.close()
    assert offsets_after_reopen(tmp_path) == [0]


def test_appends_concurrent_with_flushes_keep_their_order(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path, 0, segment_bytes=4096, defer_writes=True)
    done = threading.Event()
    durable: list[int] = []

    def flusher() -> None:
        while not done.is_set():
            durable.append(plog.flush())

    thread = threading.Thread(target=flusher)
    thread.start()
    try:
        for i in range(2000):
            assert plog.append_batch([commit("g", i % 5, i)], i) == i
    finally:
        done.set()
        thread.join(10)
    assert plog.flush() == 2000
    assert durable == sorted(durable)  # durable offsets only move forward
    assert len(plog.segments()) > 10
    plog.close()
    assert offsets_after_reopen(tmp_path, 4096) == list(range(2000))
