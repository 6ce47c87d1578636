"""Compaction of delta records: a ShareUpdate (1003) is kept unless a later ShareSnapshot (1002)
record, value or tombstone, of the same (group, topic id, partition) exists; ShareUpdates never
supersede each other; ShareSnapshots supersede each other as any key does."""

from __future__ import annotations

import uuid
from pathlib import Path

from storage.compaction import compact
from storage.log import PartitionLog
from storage.records import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareUpdateKey,
    ShareUpdateValue,
    decode_record,
    encode_record,
)

from .helpers import commit

SEG = 400
TOPIC = uuid.UUID(int=7)

Raw = tuple[bytes, bytes | None]


def snapshot(partition: int, epoch: int, group: str = "g") -> Raw:
    return encode_record(
        ShareSnapshotKey(group_id=group, topic_id=TOPIC, partition=partition),
        ShareSnapshotValue(snapshot_epoch=epoch, state_epoch=0, leader_epoch=0, start_offset=0,
                           create_timestamp=0, write_timestamp=0),
    )


def snapshot_tombstone(partition: int, group: str = "g") -> Raw:
    return encode_record(ShareSnapshotKey(group_id=group, topic_id=TOPIC, partition=partition),
                         None)


def update(partition: int, n: int, group: str = "g") -> Raw:
    batch = ShareStateBatch(first_offset=n, last_offset=n, delivery_state=2, delivery_count=1)
    return encode_record(
        ShareUpdateKey(group_id=group, topic_id=TOPIC, partition=partition),
        ShareUpdateValue(snapshot_epoch=0, leader_epoch=0, start_offset=n,
                         state_batches=(batch,)),
    )


def label(key: bytes, value: bytes | None) -> str:
    k, v = decode_record(key, value)
    kind = type(k).__name__.removesuffix("Key")
    if kind == "OffsetCommit":
        return "commit"
    if v is None:
        return f"{kind}:{k.partition}:tombstone"
    n = v.snapshot_epoch if kind == "ShareSnapshot" else v.state_batches[0].first_offset
    return f"{kind}:{k.group_id}:{k.partition}:{n}"


def write(tmp_path: Path, records: list[tuple[Raw, int]]) -> PartitionLog:
    """One batch per record (timestamp given), then filler commits so that all of them are in
    closed segments."""
    plog = PartitionLog.open(tmp_path, 0, segment_bytes=SEG)
    for record, timestamp in records:
        plog.append_batch([record], timestamp)
    for i in range(12):
        plog.append_batch([commit("filler", 0, i)], 90_000)
    return plog


def share_labels(plog: PartitionLog) -> list[str]:
    return [lbl for _, _, k, v in plog.read() if (lbl := label(k, v)) != "commit"]


def test_updates_before_a_snapshot_are_dropped_after_it_kept_keys_interleaved(
        tmp_path: Path) -> None:
    plog = write(tmp_path, [
        (update(0, 1), 1), (update(1, 1), 1), (update(0, 2), 1),
        (snapshot(0, 1), 1),
        (update(0, 3), 1), (update(1, 2), 1), (update(0, 4), 1),
        (update(0, 5, group="other"), 1),  # same topic and partition, another group
    ])
    compact(plog, tombstone_retention_ms=10_000, now_ms=100_000)
    assert share_labels(plog) == [
        "ShareUpdate:g:1:1",  # partition 1 has no snapshot: every update stays
        "ShareSnapshot:g:0:1",
        "ShareUpdate:g:0:3", "ShareUpdate:g:1:2", "ShareUpdate:g:0:4",
        "ShareUpdate:other:0:5",
    ]
    plog.close()


def test_a_later_snapshot_supersedes_the_earlier_one_and_the_updates_between(
        tmp_path: Path) -> None:
    plog = write(tmp_path, [
        (snapshot(0, 1), 1), (update(0, 1), 1), (update(0, 2), 1),
        (snapshot(0, 2), 1), (update(0, 3), 1),
    ])
    compact(plog, 10_000, 100_000)
    assert share_labels(plog) == ["ShareSnapshot:g:0:2", "ShareUpdate:g:0:3"]
    plog.close()


def test_a_snapshot_tombstone_drops_earlier_updates_and_goes_after_retention(
        tmp_path: Path) -> None:
    records = [(snapshot(0, 1), 1), (update(0, 1), 1), (update(0, 2), 1),
               (snapshot_tombstone(0), 50_000), (update(1, 1), 1)]
    plog = write(tmp_path, records)
    compact(plog, tombstone_retention_ms=10_000, now_ms=55_000)  # tombstone still retained
    assert share_labels(plog) == ["ShareSnapshot:0:tombstone", "ShareUpdate:g:1:1"]
    compact(plog, tombstone_retention_ms=10_000, now_ms=60_000)
    assert share_labels(plog) == ["ShareUpdate:g:1:1"]
    plog.close()


def test_updates_stay_while_their_snapshot_is_in_the_active_segment(tmp_path: Path) -> None:
    plog = write(tmp_path, [(update(0, 1), 1), (update(0, 2), 1)])
    plog.append_batch([snapshot(0, 1)], 95_000)  # the active segment: not compacted
    compact(plog, 10_000, 100_000)
    assert share_labels(plog) == ["ShareUpdate:g:0:1", "ShareUpdate:g:0:2",
                                  "ShareSnapshot:g:0:1"]
    plog.close()


def test_delta_compaction_is_idempotent_and_optional(tmp_path: Path) -> None:
    records = [(update(0, 1), 1), (snapshot(0, 1), 1), (update(0, 2), 1), (update(0, 3), 1)]
    plog = write(tmp_path, records)
    compact(plog, 10_000, 100_000)
    once = list(plog.read())
    again = compact(plog, 10_000, 100_000)
    assert list(plog.read()) == once and again.records_after == again.records_before
    plog.close()
    # with no delta types declared, a ShareUpdate is an ordinary key: the latest one stays
    plain = write(tmp_path / "plain", records)
    compact(plain, 10_000, 100_000, deltas={})
    assert share_labels(plain) == ["ShareSnapshot:g:0:1", "ShareUpdate:g:0:3"]
    plain.close()
