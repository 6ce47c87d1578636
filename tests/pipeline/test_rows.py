"""Stored records -> Arrow batches, without Spark."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any, cast

from pipeline.rows import record_batches
from pipeline.schema import ARROW_SCHEMA
from pipeline.segments import list_segments, read_segment
from pipeline.synthetic import write_store
from storage.codec import kafka_uuid_str
from storage.dump import dump
from storage.records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupPartitionMetadataKey,
    ShareGroupPartitionMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareUpdateKey,
    ShareUpdateValue,
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataKey,
    StreamsGroupMetadataValue,
    StreamsGroupPartitionMetadataKey,
    StreamsGroupPartitionMetadataValue,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTopologyKey,
    StreamsGroupTopologyValue,
    StreamsTopicInfo,
    Subtopology,
    TaskIds,
    TaskIdsWithEpochs,
    TopicMetadata,
    TopicPartitions,
    encode_record,
)


def test_many_batches_lose_no_record(tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_store(store, 3000, partitions=1, consumer_groups=2, classic_groups=1)
    types: Counter[str] = Counter()
    offsets: list[int] = []
    for segment in list_segments([str(store)]):
        if segment.log != "__consumer_offsets":
            continue
        for batch in record_batches(segment.store, segment.log, segment.partition,
                                    read_segment(segment), batch_rows=97):
            assert batch.schema == ARROW_SCHEMA
            assert batch.num_rows <= 97
            # neither column has nulls: every row has a type and an offset
            types.update(cast("list[str]", batch.column("type").to_pylist()))
            offsets += cast("list[int]", batch.column("offset").to_pylist())
    expected = list(dump(store))
    assert sorted(offsets) == [r["offset"] for r in expected]
    assert types == Counter(r["type"] for r in expected)


def test_undecodable_record_gets_a_row(tmp_path: Path) -> None:
    records = [(0, 5, b"\x00\x01garbage", b"\x00\x00"), (1, 6, b"\x7f\x00", None)]
    (batch,) = list(record_batches("s", "__consumer_offsets", 0, records))
    rows = batch.to_pylist()
    assert [r["type"] for r in rows] == ["Undecodable", "Undecodable"]
    assert all(r["error"] for r in rows)
    assert [r["tombstone"] for r in rows] == [False, True]


def test_share_group_records_fill_their_columns() -> None:
    """Share group records (the real record classes) fill the columns their consumer group
    counterparts fill; the share-partition state records carry their group."""
    topic = uuid.UUID(int=42)
    tps = (TopicPartitions(topic_id=topic, partitions=(0, 2)),)
    g, m = "q", "member-1"
    pairs: list[tuple[Any, Any]] = [
        (ShareGroupMemberMetadataKey(group_id=g, member_id=m), ShareGroupMemberMetadataValue(
            client_id="c1", client_host="/h", subscribed_topic_names=("jobs",))),
        (ShareGroupMetadataKey(group_id=g), ShareGroupMetadataValue(epoch=2)),
        (ShareGroupPartitionMetadataKey(group_id=g), ShareGroupPartitionMetadataValue(
            topics=(TopicMetadata(topic_id=topic, topic_name="jobs", num_partitions=3),))),
        (ShareGroupTargetAssignmentMemberKey(group_id=g, member_id=m),
         ShareGroupTargetAssignmentMemberValue(topic_partitions=tps)),
        (ShareGroupTargetAssignmentMetadataKey(group_id=g),
         ShareGroupTargetAssignmentMetadataValue(assignment_epoch=2, timestamp=1234)),
        (ShareGroupCurrentMemberAssignmentKey(group_id=g, member_id=m),
         ShareGroupCurrentMemberAssignmentValue(member_epoch=2, previous_member_epoch=1,
                                                state=0, assigned_partitions=tps)),
        (ShareGroupStatePartitionMetadataKey(group_id=g), ShareGroupStatePartitionMetadataValue()),
        (ShareSnapshotKey(group_id=g, topic_id=topic, partition=0), ShareSnapshotValue(
            snapshot_epoch=0, state_epoch=2, leader_epoch=0, start_offset=5,
            create_timestamp=1, write_timestamp=1)),
        (ShareUpdateKey(group_id=g, topic_id=topic, partition=0), ShareUpdateValue(
            snapshot_epoch=0, leader_epoch=0, start_offset=-1, state_batches=(
                ShareStateBatch(first_offset=5, last_offset=9, delivery_state=2,
                                delivery_count=1),))),
        (ShareGroupCurrentMemberAssignmentKey(group_id=g, member_id=m), None),
        (ShareGroupMemberMetadataKey(group_id=g, member_id=m), None),
    ]
    records = [(i, 100 + i, *encode_record(k, v)) for i, (k, v) in enumerate(pairs)]
    (batch,) = list(record_batches("s", "__consumer_offsets", 3, records))
    assert batch.schema == ARROW_SCHEMA
    rows = {r["offset"]: r for r in batch.to_pylist()}
    assert [rows[i]["type"] for i in range(len(pairs))] == [
        "ShareGroupMemberMetadata", "ShareGroupMetadata", "ShareGroupPartitionMetadata",
        "ShareGroupTargetAssignmentMember", "ShareGroupTargetAssignmentMetadata",
        "ShareGroupCurrentMemberAssignment", "ShareGroupStatePartitionMetadata",
        "ShareSnapshot", "ShareUpdate", "ShareGroupCurrentMemberAssignment",
        "ShareGroupMemberMetadata"]
    assert all(r["group_id"] == g for r in rows.values())
    parts = [{"topic_id": kafka_uuid_str(topic), "partitions": [0, 2]}]
    member = rows[0]
    assert (member["member_id"], member["subscribed_topics"], member["client_id"]) == (
        m, ["jobs"], "c1")
    assert rows[1]["epoch"] == 2
    assert rows[2]["topics"] == [{"topic_id": kafka_uuid_str(topic), "topic_name": "jobs",
                                  "num_partitions": 3}]
    assert (rows[3]["member_id"], rows[3]["partitions"]) == (m, parts)
    assert (rows[4]["epoch"], rows[4]["assignment_timestamp"]) == (2, 1234)
    current = rows[5]
    assert (current["member_id"], current["epoch"], current["previous_epoch"],
            current["member_state"], current["partitions"], current["pending_partitions"]) == (
        m, 2, 1, 0, parts, None)
    assert all(rows[i]["member_id"] is None for i in (6, 7, 8))
    for i in (9, 10):
        assert rows[i]["tombstone"] and rows[i]["member_id"] == m and rows[i]["epoch"] is None
        assert rows[i]["subscribed_topics"] is None and rows[i]["partitions"] is None


def test_streams_group_records_fill_their_columns() -> None:
    """Streams group records (types 17 to 23, the real record classes): tasks by subtopology in
    the task columns (record 22's with the active tasks' assignment epochs), the topology's
    source and repartition source topics in ``subscribed_topics``, type 18 read with its
    topics, and tombstones keeping their key."""
    topic = uuid.UUID(int=7)
    g, m = "app", "member-1"
    topology = StreamsGroupTopologyValue(epoch=1, subtopologies=(
        Subtopology(subtopology_id="0", source_topics=("clicks",),
                    repartition_sink_topics=("app-repart",)),
        Subtopology(subtopology_id="1", repartition_source_topics=(
            StreamsTopicInfo(name="app-repart", partitions=4),), state_changelog_topics=(
            StreamsTopicInfo(name="app-store-changelog"),)),
    ))
    pairs: list[tuple[Any, Any]] = [
        (StreamsGroupMemberMetadataKey(group_id=g, member_id=m), StreamsGroupMemberMetadataValue(
            client_id="c1", client_host="/h", rebalance_timeout_ms=30000, topology_epoch=1,
            process_id="p1")),
        (StreamsGroupTopologyKey(group_id=g), topology),
        (StreamsGroupMetadataKey(group_id=g), StreamsGroupMetadataValue(
            epoch=3, metadata_hash=99, validated_topology_epoch=1)),
        (StreamsGroupPartitionMetadataKey(group_id=g), StreamsGroupPartitionMetadataValue(
            topics=(TopicMetadata(topic_id=topic, topic_name="clicks", num_partitions=4),))),
        (StreamsGroupTargetAssignmentMemberKey(group_id=g, member_id=m),
         StreamsGroupTargetAssignmentMemberValue(
             active_tasks=(TaskIds(subtopology_id="0", partitions=(0, 2)),
                           TaskIds(subtopology_id="1", partitions=(1,))),
             standby_tasks=(TaskIds(subtopology_id="1", partitions=(3,)),))),
        (StreamsGroupTargetAssignmentMetadataKey(group_id=g),
         StreamsGroupTargetAssignmentMetadataValue(assignment_epoch=3, timestamp=1234)),
        (StreamsGroupCurrentMemberAssignmentKey(group_id=g, member_id=m),
         StreamsGroupCurrentMemberAssignmentValue(
             member_epoch=3, previous_member_epoch=2, state=2,
             active_tasks=(TaskIdsWithEpochs(subtopology_id="0", partitions=(0, 2),
                                             assignment_epochs=(2, 3)),),
             standby_tasks=(TaskIdsWithEpochs(subtopology_id="1", partitions=(3,)),),
             active_tasks_pending_revocation=(TaskIdsWithEpochs(
                 subtopology_id="1", partitions=(2,), assignment_epochs=(2,)),))),
        (StreamsGroupCurrentMemberAssignmentKey(group_id=g, member_id=m), None),
        (StreamsGroupTargetAssignmentMemberKey(group_id=g, member_id=m), None),
        (StreamsGroupMemberMetadataKey(group_id=g, member_id=m), None),
        (StreamsGroupMetadataKey(group_id=g), None),
        (StreamsGroupTopologyKey(group_id=g), None),
    ]
    records = [(i, 100 + i, *encode_record(k, v)) for i, (k, v) in enumerate(pairs)]
    (batch,) = list(record_batches("s", "__consumer_offsets", 1, records))
    assert batch.schema == ARROW_SCHEMA
    rows = {r["offset"]: r for r in batch.to_pylist()}
    assert [(rows[i]["type_id"], rows[i]["type"]) for i in range(len(pairs))] == [
        (19, "StreamsGroupMemberMetadata"), (23, "StreamsGroupTopology"),
        (17, "StreamsGroupMetadata"), (18, "StreamsGroupPartitionMetadata"),
        (21, "StreamsGroupTargetAssignmentMember"), (20, "StreamsGroupTargetAssignmentMetadata"),
        (22, "StreamsGroupCurrentMemberAssignment"), (22, "StreamsGroupCurrentMemberAssignment"),
        (21, "StreamsGroupTargetAssignmentMember"), (19, "StreamsGroupMemberMetadata"),
        (17, "StreamsGroupMetadata"), (23, "StreamsGroupTopology")]
    assert all(r["group_id"] == g for r in rows.values())
    member = rows[0]
    assert (member["member_id"], member["client_id"], member["rebalance_timeout_ms"],
            member["topology_epoch"], member["process_id"], member["instance_id"],
            member["subscribed_topics"]) == (m, "c1", 30000, 1, "p1", None, None)
    assert (rows[1]["topology_epoch"], rows[1]["subscribed_topics"]) == (
        1, ["app-repart", "clicks"])
    assert (rows[2]["epoch"], rows[2]["topology_epoch"]) == (3, 1)
    assert rows[3]["topics"] == [{"topic_id": kafka_uuid_str(topic), "topic_name": "clicks",
                                  "num_partitions": 4}]
    target = rows[4]
    assert (target["member_id"], target["partitions"], target["warmup_tasks"]) == (m, None, [])
    assert target["active_tasks"] == [
        {"subtopology_id": "0", "partitions": [0, 2], "assignment_epochs": None},
        {"subtopology_id": "1", "partitions": [1], "assignment_epochs": None}]
    assert target["standby_tasks"] == [
        {"subtopology_id": "1", "partitions": [3], "assignment_epochs": None}]
    assert (rows[5]["epoch"], rows[5]["assignment_timestamp"]) == (3, 1234)
    current = rows[6]
    assert (current["member_id"], current["epoch"], current["previous_epoch"],
            current["member_state"], current["partitions"]) == (m, 3, 2, 2, None)
    assert current["active_tasks"] == [
        {"subtopology_id": "0", "partitions": [0, 2], "assignment_epochs": [2, 3]}]
    assert current["standby_tasks"] == [
        {"subtopology_id": "1", "partitions": [3], "assignment_epochs": []}]
    assert current["pending_tasks"] == [
        {"subtopology_id": "1", "partitions": [2], "assignment_epochs": [2]}]
    for i in (7, 8, 9):
        assert rows[i]["tombstone"] and rows[i]["member_id"] == m, i
        assert rows[i]["epoch"] is None and rows[i]["active_tasks"] is None, i
    for i in (10, 11):
        assert rows[i]["tombstone"] and rows[i]["member_id"] is None, i
        assert rows[i]["epoch"] is None and rows[i]["subscribed_topics"] is None, i
