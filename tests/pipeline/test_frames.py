"""Bulk framing and decoding (no Spark) against ``storage``'s own record-by-record reading."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.commits import commit_positions, decode_commits
from pipeline.digest import CURRENT_ASSIGNMENT_IDS, current_assignments, digest_batches
from pipeline.frames import Frames, segment_frames
from pipeline.segments import Segment, list_segments, read_segment
from pipeline.synthetic import write_store
from storage.errors import CorruptLogError, RecordDecodeError
from storage.log import PartitionLog
from storage.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    OffsetCommitKey,
    OffsetCommitValue,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupCurrentMemberAssignmentValue,
    TaskIdsWithEpochs,
    TopicPartitions,
    decode_record,
    encode_record,
)


def frames_of(segment: Segment, chunk: int = 1 << 30) -> list[Frames]:
    return list(segment_frames(segment.path, segment.partition, segment.base_offset,
                               segment.last, chunk))


def stored(chunks: list[Frames]) -> list[tuple[int, int, bytes, bytes | None]]:
    return [f.stored(i) for f in chunks for i in range(len(f))]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("frames") / "store"
    write_store(path, 4000, partitions=2, consumer_groups=2, classic_groups=1,
                segment_bytes=32 * 1024)
    return path


def test_frames_are_the_stored_records(store: Path) -> None:
    segments = list_segments([str(store)])
    assert len(segments) > 4
    for segment in segments:
        expected = list(read_segment(segment))
        assert stored(frames_of(segment)) == expected, segment.path
        # in chunks of whole batches: the same records
        chunks = frames_of(segment, 50)
        assert len(chunks) > 1 or len(expected) <= 50
        assert stored(chunks) == expected


def test_long_batches_tombstones_and_odd_keys(tmp_path: Path) -> None:
    """A batch of 500 records next to batches of 1 (read partly in Python), tombstones, an
    empty key and a one-byte key (type id -1)."""
    key, value = encode_record(OffsetCommitKey(group="g", topic="t", partition=0),
                               OffsetCommitValue(offset=1, commit_timestamp=2))
    with PartitionLog.open(tmp_path, 0) as log:
        log.append_batch([(key, value)], 10)
        log.append_batch([(key, value if i % 3 else None) for i in range(500)], 11)
        log.append_batch([(b"", b"v"), (b"\x01", None)], 12)
        log.append_batch([(key, value)] * 3, 13)
        log.flush()
    (segment,) = list_segments([str(tmp_path)])
    (chunk,) = frames_of(segment)
    assert stored([chunk]) == list(read_segment(segment))
    assert len(chunk) == 506
    assert chunk.type_id.tolist()[501:503] == [-1, -1]
    assert chunk.tombstone.sum() == sum(1 for i in range(500) if i % 3 == 0) + 1


def test_torn_tail_is_skipped_and_other_damage_raises(tmp_path: Path) -> None:
    target = tmp_path / "store"
    write_store(target, 500, partitions=1, consumer_groups=1, classic_groups=0)
    path = target / "__consumer_offsets-0" / "00000000000000000000.log"
    intact = path.read_bytes()
    (segment,) = [s for s in list_segments([str(target)]) if s.log == "__consumer_offsets"]
    with path.open("ab") as f:
        f.write(b"\x00\x00\x01\x00garbage")  # a torn last batch
    assert stored(frames_of(segment)) == list(read_segment(segment))
    assert len(stored(frames_of(segment))) > 400
    damaged = bytearray(intact)
    damaged[100] ^= 0xFF  # a flipped bit in the first batches: valid batches follow
    path.write_bytes(bytes(damaged))
    with pytest.raises(CorruptLogError) as error:
        frames_of(segment)
    with pytest.raises(CorruptLogError) as expected:
        list(read_segment(segment))
    assert (error.value.position, error.value.reason) == (expected.value.position,
                                                           expected.value.reason)


def test_other_files_beside_the_segments_are_ignored(tmp_path: Path) -> None:
    """Snapshots (and anything else not named like a segment) are not read."""
    store = tmp_path / "store"
    write_store(store, 300, partitions=1, consumer_groups=1, classic_groups=0)
    before = list_segments([str(store)])
    directory = store / "__consumer_offsets-0"
    (directory / "00000000000000000042.snapshot").write_bytes(b"\x00" * 64)
    (directory / "snapshots").mkdir()
    (directory / "snapshots" / "00000000000000000042.log").write_bytes(b"junk")
    assert list_segments([str(store)]) == before
    kinds = [kind for segment in before for batch in digest_batches(
        segment.store, segment.log, segment.partition, iter(frames_of(segment)), [])
        for kind in batch.column("kind").to_pylist()]
    assert kinds.count("segment") == len(before)


def _commit_records() -> list[tuple[bytes, bytes | None]]:
    topic = uuid.UUID(int=5)
    records: list[tuple[bytes, bytes | None]] = []
    for i, (metadata, topic_id) in enumerate([
        ("", None), ("", topic), ("ascii metadata", None), ("héllo", topic),  # not ASCII
        ("x" * 200, None),  # a two-byte length
    ]):
        records.append(encode_record(
            OffsetCommitKey(group=f"g{i % 2}", topic="orders", partition=i),
            OffsetCommitValue(offset=1000 + i, leader_epoch=3, metadata=metadata,
                              commit_timestamp=1_700_000_000_000 + i,
                              expire_timestamp=-1 if i % 2 else 1_800_000_000_000,
                              topic_id=topic_id)))
    key = records[0][0]
    records += [
        (key, None),  # a tombstone
        (b"\x00\x00" + key[2:], records[0][1]),  # the legacy key version 0
        (key, b"\x00\x00\x01"),  # a value that does not decode
        (key, b"\x00\x07" + (records[0][1] or b"")[2:]),  # a value version from the future
        (key[:-2], records[0][1]),  # a key that does not decode
    ]
    return records


def test_offset_commits_decode_as_storage_decodes_them(tmp_path: Path) -> None:
    records = _commit_records()
    with PartitionLog.open(tmp_path, 0) as log:
        log.append_batch(records, 10)
        log.flush()
    (segment,) = list_segments([str(tmp_path)])
    (frames,) = frames_of(segment)
    commits = decode_commits(frames, commit_positions(frames))
    decoded: dict[int, Any] = {}
    failed: dict[int, str] = {}
    for i, (key, value) in enumerate(records):
        try:
            decoded[i] = decode_record(key, value)
        except RecordDecodeError as exc:
            failed[i] = str(exc)
    assert dict(commits.errors) == failed and len(failed) == 3
    assert commits.index.tolist() == sorted(decoded)
    for n, i in enumerate(commits.index.tolist()):
        key, value = decoded[i]
        assert commits.keys[int(commits.key[n])] == (key.group, key.topic, key.partition)
        assert bool(commits.live[n]) == (value is not None)
        if value is not None:
            assert (int(commits.commit_offset[n]), int(commits.commit_timestamp[n]),
                    int(commits.expire_timestamp[n])) == (
                value.offset, value.commit_timestamp, value.expire_timestamp)


def test_current_assignments_read_epoch_and_state(tmp_path: Path) -> None:
    tps = (TopicPartitions(topic_id=uuid.UUID(int=9), partitions=(0, 1)),)
    tasks = (TaskIdsWithEpochs(subtopology_id="0", partitions=(1,), assignment_epochs=(4,)),)
    records = [
        encode_record(ConsumerGroupCurrentMemberAssignmentKey(group_id="c", member_id="m1"),
                      ConsumerGroupCurrentMemberAssignmentValue(
                          member_epoch=7, previous_member_epoch=6, state=2,
                          assigned_partitions=tps, partitions_pending_revocation=tps)),
        encode_record(ShareGroupCurrentMemberAssignmentKey(group_id="s", member_id="m2"),
                      ShareGroupCurrentMemberAssignmentValue(
                          member_epoch=-1, previous_member_epoch=0, state=0)),
        encode_record(StreamsGroupCurrentMemberAssignmentKey(group_id="k", member_id="m3"),
                      StreamsGroupCurrentMemberAssignmentValue(
                          member_epoch=2**31 - 1, previous_member_epoch=1, state=1,
                          active_tasks=tasks)),
        encode_record(ConsumerGroupCurrentMemberAssignmentKey(group_id="c", member_id="m1"),
                      None),
    ]
    records.append((records[0][0], b"\x00\x09" + (records[0][1] or b"")[2:]))  # version 9
    with PartitionLog.open(tmp_path, 0) as log:
        log.append_batch(records, 10)
        log.flush()
    (segment,) = list_segments([str(tmp_path)])
    (frames,) = frames_of(segment)
    index = np.flatnonzero(np.isin(frames.type_id, CURRENT_ASSIGNMENT_IDS))
    result = current_assignments("s", 0, frames, index)
    assert result is not None
    batch, done = result
    assert done.tolist() == [True, True, True, True, False]  # version 9: decoded on its own
    rows = batch.to_pylist()
    assert [(r["type"], r["group_id"], r["member_id"], r["epoch"], r["member_state"],
             r["tombstone"], r["offset"]) for r in rows] == [
        ("ConsumerGroupCurrentMemberAssignment", "c", "m1", 7, 2, False, 0),
        ("ShareGroupCurrentMemberAssignment", "s", "m2", -1, 0, False, 1),
        ("StreamsGroupCurrentMemberAssignment", "k", "m3", 2**31 - 1, 1, False, 2),
        ("ConsumerGroupCurrentMemberAssignment", "c", "m1", None, None, True, 3),
    ]
