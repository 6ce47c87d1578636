"""A partition's transactions: markers as control batches clients can read, the last stable
offset, the aborted transactions a read_committed fetch gets, fencing by the marker's epoch,
and all of it rebuilt when the log is reopened."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from coordinator.topiclog import BatchError, LogConfig, PartitionLog
from coordinator.topiclog.batch import TRANSACTIONAL_BIT, read_header
from protocol import ErrorCode
from tests.unit.topiclog_helpers import make_batch, set_field

CONFIG = LogConfig()


def txn_batch(values: list[bytes], producer_id: int, epoch: int, sequence: int) -> bytes:
    batch = make_batch(values, producer_id=producer_id, epoch=epoch, sequence=sequence)
    attributes = read_header(batch).attributes | TRANSACTIONAL_BIT
    return set_field(batch, 21, ">h", attributes)


def test_markers_move_the_last_stable_offset_and_record_aborted_transactions(
        tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    plog.append(make_batch([b"plain"]), CONFIG, 0)  # offset 0
    plog.append(txn_batch([b"a1", b"a2"], 5, 0, 0), CONFIG, 0)  # 1-2, producer 5
    plog.append(txn_batch([b"b1"], 6, 0, 0), CONFIG, 0)  # 3, producer 6
    assert plog.last_stable_offset == 1 and plog.high_watermark == 4
    assert read_header(plog.read(0, 1 << 20, True, max_offset=1)).last_offset == 0
    assert plog.read(1, 1 << 20, True, max_offset=1) == b""
    assert plog.append_marker(5, 0, False, 0, 10) == 4  # producer 5 aborts
    assert plog.last_stable_offset == 3  # producer 6 is still open
    plog.append_marker(6, 0, True, 0, 10)  # 5: producer 6 commits
    assert plog.last_stable_offset == plog.high_watermark == 6
    [aborted] = plog.transactions.aborted_between(0, 6)
    assert (aborted.producer_id, aborted.first_offset, aborted.last_offset) == (5, 1, 4)
    assert plog.transactions.aborted_between(5, 6) == []

    reopened = PartitionLog.open(tmp_path / "t-0", "t", 0)
    assert reopened.last_stable_offset == 6
    assert reopened.transactions.aborted_between(0, 6) == [aborted]


def test_an_open_transaction_survives_a_reopen_and_the_marker_is_a_control_batch(
        tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    plog.append(txn_batch([b"x"], 9, 3, 0), CONFIG, 0)
    plog.close()
    reopened = PartitionLog.open(tmp_path / "t-0", "t", 0)
    assert reopened.last_stable_offset == 0
    offset = reopened.append_marker(9, 3, True, 0, 1_000)
    data = reopened.read(offset, 1 << 20, True)
    batch = DefaultRecordBatch(data)  # as a client reads it
    assert batch.is_control_batch and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch) == (9, 3)
    [record] = list(batch)
    assert record.key == b"\x00\x00\x00\x01"  # version 0, type 1: COMMIT
    assert reopened.last_stable_offset == reopened.high_watermark


def test_a_marker_fences_older_epochs_and_an_older_marker_is_refused(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    plog.append(txn_batch([b"x"], 9, 0, 0), CONFIG, 0)
    plog.append_marker(9, 1, False, 0, 0)  # a fencing abort with the bumped epoch
    with pytest.raises(BatchError) as raised:
        plog.append(txn_batch([b"zombie"], 9, 0, 1), CONFIG, 0)
    assert raised.value.code is ErrorCode.invalid_producer_epoch
    with pytest.raises(BatchError):
        plog.append_marker(9, 0, True, 0, 0)
    # the new epoch starts its sequence at 0; the marker did not take a sequence
    plog.append(txn_batch([b"new"], 9, 2, 0), CONFIG, 0)
    plog.append(txn_batch([b"next"], 9, 2, 1), CONFIG, 0)
