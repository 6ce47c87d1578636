"""``dump`` prints every record of a store with Kafka's names, read-only."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from storage.bench import run_store_replay
from storage.dump import dump
from storage.log import partition_dir
from storage.records import (
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareUpdateKey,
    ShareUpdateValue,
    TopicMetadataKey,
    TopicMetadataValue,
    encode_record,
)
from storage.store import Store


def test_dump_rows(tmp_path: Path) -> None:
    tid = uuid.uuid4()
    with Store.open(tmp_path, num_partitions=3) as store:
        store.partition(1).append_batch(
            [
                encode_record(
                    ConsumerGroupTargetAssignmentMetadataKey(group_id="g"),
                    ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=3, timestamp=77),
                ),
                encode_record(OffsetCommitKey(group="g", topic="t", partition=0), None),
            ],
            123,
        )
        store.partition(2).append_batch(
            [
                encode_record(
                    TopicMetadataKey(name="t"),
                    TopicMetadataValue(topic_id=tid, num_partitions=2, configs={}),
                )
            ],
            456,
        )
        store.partition(2).append_batch([(b"\x7f\x7f", b"?")], 789)  # not a known record
    # a torn tail is skipped by dump and left on disk
    active = sorted(partition_dir(tmp_path, 1).glob("*.log"))[-1]
    with active.open("ab") as fh:
        fh.write(b"\x00\x00\x01")
    rows = [json.loads(json.dumps(r)) for r in dump(tmp_path)]
    assert active.stat().st_size % 1 == 0 and active.read_bytes().endswith(b"\x00\x00\x01")
    assert rows[0] == {
        "partition": 1,
        "offset": 0,
        "timestamp": 123,
        "type": "ConsumerGroupTargetAssignmentMetadata",
        "key": {"GroupId": "g"},
        "value": {"AssignmentEpoch": 3, "Timestamp": 77},
    }
    assert rows[1]["type"] == "OffsetCommit" and rows[1]["value"] is None
    assert rows[2]["type"] == "TopicMetadata"
    assert rows[2]["value"]["NumPartitions"] == 2
    assert rows[3]["type"] == "Undecodable" and "error" in rows[3]
    assert [r["partition"] for r in dump(tmp_path, partition=2)] == [2, 2]
    assert list(dump(tmp_path, partition=0)) == []


def test_dump_offsets_match_the_log(tmp_path: Path) -> None:
    with Store.open(tmp_path, num_partitions=1) as store:
        for i in range(5):
            key = OffsetCommitKey(group="g", topic="t", partition=i)
            value = OffsetCommitValue(offset=i, commit_timestamp=i)
            store.partition(0).append_batch([encode_record(key, value)], i)
    assert [(r["offset"], r["value"]["offset"]) for r in dump(tmp_path)] == [
        (i, i) for i in range(5)
    ]


def test_bench_smoke(tmp_path: Path) -> None:
    result = run_store_replay(2_000, partitions=4, directory=str(tmp_path))
    assert result["records"] == 2_000
    assert result["replay_records_per_s"] > 0


def test_dump_shows_share_state_records(tmp_path: Path) -> None:
    """ShareSnapshot (1002) and ShareUpdate (1003) go through the generic path."""
    tid = uuid.uuid4()
    snapshot_key = ShareSnapshotKey(group_id="sg", topic_id=tid, partition=0)
    update_key = ShareUpdateKey(group_id="sg", topic_id=tid, partition=0)
    snapshot = ShareSnapshotValue(snapshot_epoch=0, state_epoch=1, leader_epoch=-1,
                                  start_offset=-1, create_timestamp=5, write_timestamp=5)
    batch = ShareStateBatch(first_offset=4, last_offset=6, delivery_state=0, delivery_count=1)
    update = ShareUpdateValue(snapshot_epoch=0, leader_epoch=0, start_offset=4,
                              delivery_complete_count=0, state_batches=(batch,))
    with Store.open(tmp_path, num_partitions=1) as store:
        store.partition(0).append_batch(
            [
                encode_record(snapshot_key, snapshot),
                encode_record(update_key, update),
                encode_record(snapshot_key, None),
            ],
            9,
        )
    rows = [json.loads(json.dumps(r)) for r in dump(tmp_path)]
    assert [r["type"] for r in rows] == ["ShareSnapshot", "ShareUpdate", "ShareSnapshot"]
    assert rows[0]["value"]["DeliveryCompleteCount"] == -1
    assert rows[1]["value"]["StateBatches"] == [
        {"FirstOffset": 4, "LastOffset": 6, "DeliveryState": 0, "DeliveryCount": 1}]
    assert rows[2]["value"] is None
    assert all(r["key"]["Partition"] == 0 and r["key"]["GroupId"] == "sg" for r in rows)
