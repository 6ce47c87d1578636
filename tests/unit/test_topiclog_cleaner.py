"""The data topics' log cleaner: latest record per key, tombstones for delete.retention.ms,
offsets and gaps kept, the active segment never cleaned, transactions as Kafka's cleaner treats
them, the dirty ratio, segment.ms rolling, and crash safety of the segment swap."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from coordinator.topiclog import BatchError, LogConfig, PartitionLog
from coordinator.topiclog import cleaner as log_cleaner
from coordinator.topiclog.batch import read_header
from coordinator.topiclog.cleaner import _take, _write_cleaned
from protocol import ErrorCode
from storage.segment import swap_name

NOW = 10_000_000
CONFIG = LogConfig(segment_bytes=300, compact=True, delete=False, delete_retention_ms=1_000)
APPEND = LogConfig(segment_bytes=100)  # about a batch per segment; cleaned up to 300 bytes each

Entry = tuple[bytes | None, bytes | None]  # key, value (None: a tombstone)


def keyed_batch(entries: list[Entry], timestamp: int = NOW, compression: int = 0,
                producer_id: int = -1, epoch: int = -1, sequence: int = -1,
                transactional: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(2, compression, transactional, producer_id, epoch,
                                        sequence, 1 << 20)
    for i, (key, value) in enumerate(entries):
        builder.append(i, timestamp, key, value, [])
    return bytes(builder.build())


def records(plog: PartitionLog, start: int = 0) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every data record from ``start``, as a consumer reads them."""
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = max(start, plog.log_start_offset)
    while data := plog.read(offset, 1 << 30, True):  # one segment's batches at a time
        pos = 0
        while pos < len(data):
            header = read_header(data, pos)
            batch = DefaultRecordBatch(data[pos:pos + header.size])
            if not batch.is_control_batch:
                out.extend((r.offset, r.key, r.value) for r in batch)
            pos += header.size
            offset = header.last_offset + 1
    return out


def clean(plog: PartitionLog, config: LogConfig = CONFIG, now: int = NOW) -> object:
    return asyncio.run(log_cleaner.clean(plog, config, now))


def fill(plog: PartitionLog, batches: list[bytes], config: LogConfig = APPEND) -> None:
    for batch in batches:
        plog.append(batch, config, NOW)


def overwrites() -> list[bytes]:
    return [keyed_batch([(b"a", b"a1"), (b"b", b"b1")]),
            keyed_batch([(b"a", b"a2"), (b"c", b"c1")]),
            keyed_batch([(b"b", b"b2"), (b"c", None)]),
            keyed_batch([(b"d", b"d1")]),
            keyed_batch([(b"a", b"a3")])]


def test_latest_value_per_key_offsets_kept_active_segment_untouched(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    fill(plog, overwrites())
    assert len(plog.segments) >= 3
    active_before = plog.active
    active_records = records(plog, plog.active.base_offset)
    stats = clean(plog)
    assert stats is not None
    got = records(plog)
    # the active segment's records stay whatever their keys; before it, the latest per key
    closed = [r for r in got if r[0] < plog.active.base_offset]
    assert plog.active is active_before and records(plog, plog.active.base_offset) == \
        active_records
    keys = [k for _, k, _ in closed]
    assert len(keys) == len(set(keys))
    assert (3, b"c", b"c1") not in got and (5, b"c", None) in got  # a fresh tombstone stays
    assert (0, b"a", b"a1") not in got and (1, b"b", b"b1") not in got
    assert (4, b"b", b"b2") in got and (6, b"d", b"d1") in got and got[-1] == (7, b"a", b"a3")
    assert plog.log_start_offset == 0 and plog.log_end_offset == 8
    # the offsets a consumer sees have gaps; reading from a removed offset gets the next one
    assert records(plog, 1)[0][0] == got[0][0]
    # reopened from disk, the same
    plog.close()
    reopened = PartitionLog.open(tmp_path / "t-0", "t", 0)
    assert records(reopened) == got
    assert reopened.cleaner_checkpoint == reopened.active.base_offset
    # a tombstone goes once delete.retention.ms has passed since its timestamp
    assert asyncio.run(log_cleaner.clean(reopened, CONFIG, NOW + 2_000)) is not None
    assert all(key != b"c" for _, key, _ in records(reopened))
    reopened.close()


def test_dirty_ratio_and_policy_decide_when_to_clean(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    fill(plog, overwrites())
    assert not log_cleaner.needs_cleaning(plog, LogConfig(segment_bytes=300), NOW)  # delete
    assert log_cleaner.needs_cleaning(plog, CONFIG, NOW)
    assert clean(plog) is not None
    plog.oldest_kept_tombstone_ms = None
    assert not log_cleaner.needs_cleaning(plog, CONFIG, NOW)  # nothing dirty
    plog.append(keyed_batch([(b"e", b"e1" * 300)]), CONFIG, NOW)
    plog.append(keyed_batch([(b"f", b"f1")]), CONFIG, NOW)
    dirty = log_cleaner.needs_cleaning
    assert dirty(plog, CONFIG, NOW)
    assert not dirty(plog, LogConfig(segment_bytes=300, compact=True, min_cleanable_dirty_ratio=1),
                     NOW)
    plog.close()


def test_an_open_transaction_is_not_cleaned_aborted_data_goes_markers_stay(
        tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    fill(plog, [keyed_batch([(b"k", b"v1")])])
    fill(plog, [keyed_batch([(b"k", b"aborted")], producer_id=7, epoch=0, sequence=0,
                            transactional=True)])
    plog.append_marker(7, 0, False, 0, NOW)
    plog._roll()
    fill(plog, [keyed_batch([(b"k", b"committed")], producer_id=7, epoch=0, sequence=1,
                            transactional=True)])
    plog.append_marker(7, 0, True, 0, NOW)
    plog._roll()
    fill(plog, [keyed_batch([(b"x", b"open")], producer_id=8, epoch=0, sequence=0,
                            transactional=True)])
    fill(plog, [keyed_batch([(b"k", b"later")])])
    lso = plog.last_stable_offset
    assert lso == 5
    assert all(s.base_offset <= lso for s in log_cleaner.cleanable_segments(plog)[1:])
    clean(plog, CONFIG, NOW + 2_000)  # markers and tombstones past delete.retention.ms
    got = records(plog)
    assert (1, b"k", b"aborted") not in got and (0, b"k", b"v1") not in got
    assert (3, b"k", b"committed") in got  # the latest of k below the LSO stays
    assert (5, b"x", b"open") in got and (6, b"k", b"later") in got
    plog.close()
    reopened = PartitionLog.open(tmp_path / "t-0", "t", 0)
    assert reopened.last_stable_offset == 5  # the commit marker stayed with its data
    assert records(reopened) == got
    reopened.close()


def test_a_producers_last_batch_stays_empty_so_its_sequence_survives(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    fill(plog, [keyed_batch([(b"k", b"v1")], producer_id=3, epoch=0, sequence=0)])
    fill(plog, [keyed_batch([(b"k", b"v2" * 100)])])
    fill(plog, [keyed_batch([(b"z", b"z" * 200)])])
    clean(plog)
    assert [r[0] for r in records(plog) if r[1] == b"k"] == [1]
    first = read_header(plog.read(0, 1 << 20, True))
    assert (first.producer_id, first.count, first.base_sequence) == (3, 0, 0)
    plog.close()
    reopened = PartitionLog.open(tmp_path / "t-0", "t", 0)
    assert reopened.producers.active()[0][:3] == (3, 0, 0)
    reopened.close()


def test_compressed_batches_are_cleaned_and_recompressed(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    for codec in (1, 2, 3):  # gzip, snappy, lz4
        fill(plog, [keyed_batch([(b"a", b"x%d" % codec), (b"keep%d" % codec, b"y")],
                                compression=codec)])
    fill(plog, [keyed_batch([(b"tail", b"t" * 300)])])
    clean(plog)
    got = records(plog)
    assert [r for r in got if r[1] == b"a"] == [(4, b"a", b"x3")]
    assert {r[1] for r in got} >= {b"keep1", b"keep2", b"keep3"}
    plog.close()


def test_segment_ms_rolls_the_active_segment(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    config = LogConfig(segment_ms=100)
    # as Kafka: the batches' timestamps count, not the time of the append
    plog.append(keyed_batch([(b"a", b"1")], timestamp=NOW), config, NOW)
    plog.append(keyed_batch([(b"a", b"2")], timestamp=NOW + 100), config, NOW + 5_000)
    assert len(plog.segments) == 1
    plog.append(keyed_batch([(b"a", b"3")], timestamp=NOW + 101), config, NOW + 5_000)
    assert [s.base_offset for s in plog.segments] == [0, 2]
    plog.close()


def _prepared(tmp_path: Path) -> tuple[PartitionLog, list[tuple[int, bytes | None, bytes | None]]]:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    fill(plog, overwrites())
    expected = [r for r in records(plog) if r[0] not in (0, 1, 3)]  # a3 is in the active one
    return plog, expected


@pytest.mark.parametrize("crash_at", ["cleaned", "swap", "half_finished"])
def test_a_crash_during_the_swap_keeps_every_latest_value(tmp_path: Path, crash_at: str) -> None:
    plog, expected = _prepared(tmp_path)
    before = records(plog)
    work = _take(plog)
    outputs, _ = _write_cleaned(work, CONFIG, NOW)
    directory = plog.directory
    plog.close()
    if crash_at != "cleaned":
        for output in outputs:
            swap = directory / swap_name(output.segment.base_offset, output.end)
            os.replace(output.cleaned, swap)
            if crash_at == "half_finished":  # a replaced segment already removed
                for source in output.sources[1:]:
                    source.path.unlink()
    reopened = PartitionLog.open(directory, "t", 0)
    assert not list(directory.glob("*.cleaned")) and not list(directory.glob("*.swap"))
    got = records(reopened)
    assert got == (before if crash_at == "cleaned" else expected)
    reopened.close()


def test_a_segment_deleted_meanwhile_discards_the_pass(tmp_path: Path) -> None:
    plog, _ = _prepared(tmp_path)
    before = records(plog)
    work = _take(plog)
    outputs, _ = _write_cleaned(work, CONFIG, NOW)
    plog.delete_records_before(plog.segments[1].base_offset)
    assert not log_cleaner._install(plog, work, outputs)
    assert not list(plog.directory.glob("*.cleaned"))
    assert records(plog) == [r for r in before if r[0] >= plog.log_start_offset]
    plog.close()



def test_a_compacted_topic_refuses_records_without_a_key(tmp_path: Path) -> None:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    for codec in (0, 1):
        with pytest.raises(BatchError) as refused:
            plog.append(keyed_batch([(b"k", b"v"), (None, b"v")], compression=codec), CONFIG,
                        NOW)
        assert refused.value.code is ErrorCode.invalid_record
    plog.append(keyed_batch([(None, b"v")]), APPEND, NOW)  # delete policy: keys optional
    assert plog.log_end_offset == 1
    plog.close()


def test_a_small_dedupe_buffer_cleans_in_several_passes_to_the_same_result(
        tmp_path: Path) -> None:
    whole = PartitionLog.open(tmp_path / "whole-0", "whole", 0)
    fill(whole, overwrites())
    clean(whole)
    expected = records(whole)
    whole.close()
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
    fill(plog, overwrites())
    passes = 0
    eager = dataclasses.replace(CONFIG, min_cleanable_dirty_ratio=0.0)  # any dirty segment
    while asyncio.run(log_cleaner.clean(plog, eager, NOW, dedupe_buffer_bytes=1)) is not None:
        plog.oldest_kept_tombstone_ms = None  # only dirty segments make another pass
        passes += 1
        assert passes < 10
    assert passes > 1 and records(plog) == expected
    plog.close()
