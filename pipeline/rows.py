"""Stored records -> Arrow RecordBatches of the ``coordinator-log`` schema, decoded with
``storage``'s own record codec (offset commits in bulk: :func:`frame_batches`).

Records are bucketed by type: each type fills only its own columns (see :data:`_FIELDS_OF`), and
the columns a type does not have are all-null arrays made in one call, so a batch costs little
more than decoding its records. Rows come out grouped by type within a batch (each row carries
its offset).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from pipeline.commits import Commits, commit_positions, decode_commits, key_columns
from pipeline.frames import Frames
from pipeline.schema import ARROW_SCHEMA
from storage.codec import kafka_uuid_str
from storage.errors import RecordDecodeError
from storage.records import RECORD_TYPES, decode_record

Fields = tuple[Any, ...]
Filler = Callable[[Any, Any], Fields]
StoredRecord = tuple[int, int, bytes, bytes | None]

_NAMES: dict[int, str] = {tid: rt.name for tid, rt in RECORD_TYPES.items()}
_NAMES[0] = RECORD_TYPES[1].name  # legacy offset commit key version
UNDECODABLE = "Undecodable"


_TOPIC_IDS: dict[uuid.UUID, str] = {}
"""Topic id -> Kafka's string form, memoized: a store has few topics and many assignments."""


def _topic_id(topic_id: uuid.UUID) -> str:
    if len(_TOPIC_IDS) >= 65_536:
        _TOPIC_IDS.clear()
    text = _TOPIC_IDS[topic_id] = kafka_uuid_str(topic_id)
    return text


def _tps(tps: Iterable[Any]) -> list[dict[str, Any]]:
    ids = _TOPIC_IDS
    return [{"topic_id": ids.get(tp.topic_id) or _topic_id(tp.topic_id),
             "partitions": tp.partitions} for tp in tps]


OFFSET_COMMIT = ("group_id", "commit_topic", "commit_partition", "commit_offset",
                 "commit_timestamp", "expire_timestamp")


def _offset_commit(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group, key.topic, key.partition, None, None, None
    return (key.group, key.topic, key.partition, value.offset, value.commit_timestamp,
            value.expire_timestamp)


def _txn_offset_commit(key: Any, value: Any) -> Fields:
    """A pending transactional offset (TxnOffsetCommit): the same columns as a commit."""
    if value is None:
        return key.group, key.topic, key.partition, None, None, None
    return key.group, key.topic, key.partition, value.offset, value.commit_timestamp, None


GROUP_METADATA = ("group_id", "epoch", "protocol_type", "protocol", "leader",
                  "assignment_timestamp", "classic_members")


def _group_metadata(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group, None, None, None, None, None, None
    members = [
        {"member_id": m.member_id, "instance_id": m.group_instance_id, "client_id": m.client_id,
         "session_timeout_ms": m.session_timeout, "rebalance_timeout_ms": m.rebalance_timeout,
         "subscription": m.subscription, "assignment": m.assignment}
        for m in value.members
    ]
    return (key.group, value.generation, value.protocol_type, value.protocol, value.leader,
            value.current_state_timestamp, members)


GROUP_EPOCH = ("group_id", "epoch")


def _group_epoch(key: Any, value: Any) -> Fields:
    return key.group_id, None if value is None else value.epoch


PARTITION_METADATA = ("group_id", "topics")


def _partition_metadata(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group_id, None
    return key.group_id, [
        {"topic_id": kafka_uuid_str(t.topic_id), "topic_name": t.topic_name,
         "num_partitions": t.num_partitions}
        for t in value.topics
    ]


MEMBER_METADATA = ("group_id", "member_id", "subscribed_topics", "instance_id", "client_id",
                   "rebalance_timeout_ms", "server_assignor")


def _member_metadata(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group_id, key.member_id, None, None, None, None, None
    return (key.group_id, key.member_id, list(value.subscribed_topic_names), value.instance_id,
            value.client_id, value.rebalance_timeout_ms, value.server_assignor)


TARGET_METADATA = ("group_id", "epoch", "assignment_timestamp")


def _target_metadata(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group_id, None, None
    return key.group_id, value.assignment_epoch, value.timestamp


TARGET_MEMBER = ("group_id", "member_id", "partitions")


def _target_member(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group_id, key.member_id, None
    return key.group_id, key.member_id, _tps(value.topic_partitions)


CURRENT_ASSIGNMENT = ("group_id", "member_id", "epoch", "previous_epoch", "member_state",
                      "partitions", "pending_partitions")


def _current_assignment(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group_id, key.member_id, None, None, None, None, None
    return (key.group_id, key.member_id, value.member_epoch, value.previous_member_epoch,
            value.state, _tps(value.assigned_partitions),
            _tps(value.partitions_pending_revocation))


SHARE_MEMBER_METADATA = ("group_id", "member_id", "subscribed_topics", "client_id")


def _share_member_metadata(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group_id, key.member_id, None, None
    return key.group_id, key.member_id, list(value.subscribed_topic_names), value.client_id


SHARE_CURRENT_ASSIGNMENT = ("group_id", "member_id", "epoch", "previous_epoch", "member_state",
                            "partitions")


def _share_current_assignment(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group_id, key.member_id, None, None, None, None
    return (key.group_id, key.member_id, value.member_epoch, value.previous_member_epoch,
            value.state, _tps(value.assigned_partitions))


def _tasks(tasks: Iterable[Any]) -> list[dict[str, Any]]:
    """Streams tasks (``TaskIds``: no assignment epochs; record 22's ``TaskIdsWithEpochs``:
    the active tasks' epochs, empty for standby and warm-up tasks)."""
    return [{"subtopology_id": t.subtopology_id, "partitions": t.partitions,
             "assignment_epochs": getattr(t, "assignment_epochs", None)} for t in tasks]


STREAMS_MEMBER_METADATA = ("group_id", "member_id", "instance_id", "client_id",
                           "rebalance_timeout_ms", "topology_epoch", "process_id")


def _streams_member_metadata(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group_id, key.member_id, None, None, None, None, None
    return (key.group_id, key.member_id, value.instance_id, value.client_id,
            value.rebalance_timeout_ms, value.topology_epoch, value.process_id)


STREAMS_GROUP_METADATA = ("group_id", "epoch", "topology_epoch")


def _streams_group_metadata(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group_id, None, None
    return key.group_id, value.epoch, value.validated_topology_epoch


STREAMS_TARGET_MEMBER = ("group_id", "member_id", "active_tasks", "standby_tasks",
                         "warmup_tasks")


def _streams_target_member(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group_id, key.member_id, None, None, None
    return (key.group_id, key.member_id, _tasks(value.active_tasks),
            _tasks(value.standby_tasks), _tasks(value.warmup_tasks))


STREAMS_CURRENT_ASSIGNMENT = ("group_id", "member_id", "epoch", "previous_epoch",
                              "member_state", "active_tasks", "standby_tasks", "warmup_tasks",
                              "pending_tasks")


def _streams_current_assignment(key: Any, value: Any) -> Fields:
    if value is None:
        return key.group_id, key.member_id, None, None, None, None, None, None, None
    return (key.group_id, key.member_id, value.member_epoch, value.previous_member_epoch,
            value.state, _tasks(value.active_tasks), _tasks(value.standby_tasks),
            _tasks(value.warmup_tasks), _tasks(value.active_tasks_pending_revocation))


STREAMS_TOPOLOGY = ("group_id", "topology_epoch", "subscribed_topics")


def _streams_topology(key: Any, value: Any) -> Fields:
    """The topics a streams group consumes (its source and repartition source topics: what
    Kafka's ``StreamsGroup.isSubscribedToTopic`` checks) in ``subscribed_topics``."""
    if value is None:
        return key.group_id, None, None
    topics = {t for s in value.subtopologies for t in s.source_topics}
    topics |= {t.name for s in value.subtopologies for t in s.repartition_source_topics}
    return key.group_id, value.epoch, sorted(topics)


GROUP_ONLY = ("group_id",)


def _group_only(key: Any, value: Any) -> Fields:
    return (key.group_id,)


TOPIC_METADATA = ("topics",)


def _topic_metadata(key: Any, value: Any) -> Fields:
    if value is None:
        return ([{"topic_id": None, "topic_name": key.name, "num_partitions": None}],)
    return ([{"topic_id": kafka_uuid_str(value.topic_id), "topic_name": key.name,
              "num_partitions": value.num_partitions}],)


GROUP_KEY = ("group_id", "member_id")


def _group_key(key: Any, value: Any) -> Fields:
    group = getattr(key, "group_id", None)
    if group is None:
        group = getattr(key, "group", None)
    member = getattr(key, "member_id", None)
    return (group if isinstance(group, str) else None,
            member if isinstance(member, str) else None)


def _table() -> dict[int, tuple[tuple[str, ...], Filler]]:
    by_name: dict[str, tuple[tuple[str, ...], Filler]] = {
        "OffsetCommit": (OFFSET_COMMIT, _offset_commit),
        "TxnOffsetCommit": (OFFSET_COMMIT, _txn_offset_commit),
        "GroupMetadata": (GROUP_METADATA, _group_metadata),
        "TopicMetadata": (TOPIC_METADATA, _topic_metadata),
        "ConsumerGroupMemberMetadata": (MEMBER_METADATA, _member_metadata),
        "ConsumerGroupCurrentMemberAssignment": (CURRENT_ASSIGNMENT, _current_assignment),
        "ShareGroupMemberMetadata": (SHARE_MEMBER_METADATA, _share_member_metadata),
        "ShareGroupCurrentMemberAssignment": (SHARE_CURRENT_ASSIGNMENT,
                                              _share_current_assignment),
        # share-partition state: only its group here (no member in the key)
        "ShareGroupStatePartitionMetadata": (GROUP_ONLY, _group_only),
        "ShareSnapshot": (GROUP_ONLY, _group_only),
        "ShareUpdate": (GROUP_ONLY, _group_only),
        "StreamsGroupMetadata": (STREAMS_GROUP_METADATA, _streams_group_metadata),
        "StreamsGroupMemberMetadata": (STREAMS_MEMBER_METADATA, _streams_member_metadata),
        "StreamsGroupTargetAssignmentMember": (STREAMS_TARGET_MEMBER, _streams_target_member),
        "StreamsGroupCurrentMemberAssignment": (STREAMS_CURRENT_ASSIGNMENT,
                                                _streams_current_assignment),
        "StreamsGroupTopology": (STREAMS_TOPOLOGY, _streams_topology),
    }
    # StreamsGroupPartitionMetadata (type 18, read and not replayed) has the same topics
    for prefix in ("ConsumerGroup", "ShareGroup", "StreamsGroup"):
        by_name[f"{prefix}PartitionMetadata"] = (PARTITION_METADATA, _partition_metadata)
        by_name[f"{prefix}TargetAssignmentMetadata"] = (TARGET_METADATA, _target_metadata)
    for prefix in ("ConsumerGroup", "ShareGroup"):
        by_name[f"{prefix}Metadata"] = (GROUP_EPOCH, _group_epoch)
        by_name[f"{prefix}TargetAssignmentMember"] = (TARGET_MEMBER, _target_member)
    return {tid: by_name.get(name, (GROUP_KEY, _group_key)) for tid, name in _NAMES.items()}


_TYPES = _table()
_FIELDS_OF: dict[int, tuple[str, ...]] = {tid: fields for tid, (fields, _) in _TYPES.items()}
_FIELDS_OF[-1] = ("error",)
_POSITIONS = {field.name: i for i, field in enumerate(ARROW_SCHEMA)}


class BatchBuilder:
    """Collects decoded records of one segment; :meth:`flush` makes a RecordBatch."""

    def __init__(self, store: str, log: str, partition: int,
                 batch_rows: int | None = None) -> None:
        self.store = store
        self.log = log
        self.partition = partition
        self.batch_rows = batch_rows or BATCH_ROWS
        self.buckets: dict[int, list[tuple[Any, ...]]] = {}
        self.count = 0

    def add(self, records: Iterable[StoredRecord]) -> Iterator[pa.RecordBatch]:
        """Decode ``records``; yields a batch every ``batch_rows`` rows."""
        buckets = self.buckets
        types = _TYPES
        for offset, timestamp, key_bytes, value_bytes in records:
            try:
                key, value = decode_record(key_bytes, value_bytes)
            except RecordDecodeError as exc:
                type_id = (key_bytes[0] << 8 | key_bytes[1]) if len(key_bytes) >= 2 else -1
                row: tuple[Any, ...] = (offset, timestamp, value_bytes is None, type_id,
                                        str(exc))
                buckets.setdefault(-1, []).append(row)
            else:
                type_id = (key_bytes[0] << 8) | key_bytes[1]
                row = (offset, timestamp, value_bytes is None, *types[type_id][1](key, value))
                bucket = buckets.get(type_id)
                if bucket is None:
                    bucket = buckets[type_id] = []
                bucket.append(row)
            self.count += 1
            if self.count >= self.batch_rows:
                yield self.flush()  # empties self.buckets in place

    def flush(self) -> pa.RecordBatch:
        parts = [self._part(type_id, rows) for type_id, rows in sorted(self.buckets.items())]
        self.buckets.clear()
        self.count = 0
        if not parts:
            return _empty()
        if len(parts) == 1:
            return parts[0]
        return pa.Table.from_batches(parts, ARROW_SCHEMA).combine_chunks().to_batches()[0]

    def _part(self, type_id: int, rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
        n = len(rows)
        columns = list(zip(*rows, strict=True))
        arrays: list[pa.Array | None] = [None] * len(ARROW_SCHEMA)
        put = _POSITIONS
        arrays[put["store"]] = pa.repeat(pa.scalar(self.store, pa.string()), n)
        arrays[put["log"]] = pa.repeat(pa.scalar(self.log, pa.string()), n)
        arrays[put["partition"]] = pa.repeat(pa.scalar(self.partition, pa.int32()), n)
        arrays[put["offset"]] = pa.array(columns[0], pa.int64())
        arrays[put["timestamp"]] = pa.array(columns[1], pa.int64())
        arrays[put["tombstone"]] = pa.array(columns[2], pa.bool_())
        if type_id == -1:
            arrays[put["type_id"]] = pa.array(columns[3], pa.int32())
            arrays[put["type"]] = pa.repeat(pa.scalar(UNDECODABLE, pa.string()), n)
            arrays[put["error"]] = pa.array(columns[4], pa.string())
        else:
            arrays[put["type_id"]] = pa.repeat(pa.scalar(type_id, pa.int32()), n)
            arrays[put["type"]] = pa.repeat(pa.scalar(_NAMES[type_id], pa.string()), n)
            for name, column in zip(_FIELDS_OF[type_id], columns[3:], strict=True):
                i = put[name]
                arrays[i] = pa.array(column, ARROW_SCHEMA.field(i).type)
        filled = [
            pa.nulls(n, ARROW_SCHEMA.field(i).type) if array is None else array
            for i, array in enumerate(arrays)
        ]
        return pa.RecordBatch.from_arrays(filled, schema=ARROW_SCHEMA)


BATCH_ROWS = 65_536


def _empty() -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=ARROW_SCHEMA)


def record_batches(store: str, log: str, partition: int, records: Iterable[StoredRecord],
                   batch_rows: int | None = None) -> Iterator[pa.RecordBatch]:
    """Every stored record of one partition's segment as rows, in batches."""
    builder = BatchBuilder(store, log, partition, batch_rows)
    yield from builder.add(records)
    if builder.count:
        yield builder.flush()


def commit_batch(store: str, log: str, partition: int, frames: Frames,
                 commits: Commits) -> pa.RecordBatch:
    """The rows of decoded OffsetCommit records (:mod:`pipeline.commits`)."""
    n = len(commits)
    put = _POSITIONS
    arrays: list[pa.Array | None] = [None] * len(ARROW_SCHEMA)
    arrays[put["store"]] = pa.repeat(pa.scalar(store, pa.string()), n)
    arrays[put["log"]] = pa.repeat(pa.scalar(log, pa.string()), n)
    arrays[put["partition"]] = pa.repeat(pa.scalar(partition, pa.int32()), n)
    arrays[put["offset"]] = pa.array(frames.offset[commits.index], pa.int64())
    arrays[put["timestamp"]] = pa.array(frames.timestamp[commits.index], pa.int64())
    arrays[put["type_id"]] = pa.array(frames.type_id[commits.index], pa.int32())
    arrays[put["type"]] = pa.repeat(pa.scalar(_NAMES[1], pa.string()), n)
    arrays[put["tombstone"]] = pa.array(~commits.live, pa.bool_())
    group, topic, topic_partition = key_columns(commits)
    arrays[put["group_id"]] = group
    arrays[put["commit_topic"]] = topic
    arrays[put["commit_partition"]] = topic_partition
    tombstone = ~commits.live
    arrays[put["commit_offset"]] = pa.array(commits.commit_offset, pa.int64(), mask=tombstone)
    arrays[put["commit_timestamp"]] = pa.array(commits.commit_timestamp, pa.int64(),
                                               mask=tombstone)
    arrays[put["expire_timestamp"]] = pa.array(commits.expire_timestamp, pa.int64(),
                                               mask=tombstone)
    filled = [pa.nulls(n, ARROW_SCHEMA.field(i).type) if array is None else array
              for i, array in enumerate(arrays)]
    return pa.RecordBatch.from_arrays(filled, schema=ARROW_SCHEMA)


def frame_batches(store: str, log: str, partition: int, frames: Frames,
                  batch_rows: int | None = None) -> Iterator[pa.RecordBatch]:
    """Every record of ``frames`` as rows: offset commits decoded in bulk
    (:mod:`pipeline.commits`), the other records one by one."""
    commits = decode_commits(frames, commit_positions(frames))
    if len(commits):
        yield commit_batch(store, log, partition, frames, commits)
    rest = np.ones(len(frames), dtype=bool)
    rest[commits.index] = False
    stored = frames.stored
    yield from record_batches(store, log, partition,
                              (stored(i) for i in np.flatnonzero(rest).tolist()), batch_rows)
