"""KIP-932 share group records (types 9 to 15), and the share coordinator's share-partition
state records ShareSnapshot and ShareUpdate (1002 and 1003 here).

Kafka writes ShareSnapshot/ShareUpdate to ``__share_group_state`` with type ids 0 and 1; this
store has one type-id namespace for every coordinator partition and 0/1 are OffsetCommit's, so
they get 1002 and 1003 and are written to the group's own coordinator partition. Their fields are
Kafka's (``share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}*.json``).
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from storage.codec import (
    INT8,
    INT16,
    INT32,
    INT64,
    NSTRING,
    STRING,
    UUID,
    Array,
    Struct,
    codec,
    f,
    record,
)
from storage.records.common import TopicMetadata, TopicPartitions

_TP = Array(Struct(TopicPartitions))


@codec
@record
class ShareGroupPartitionMetadataKey:
    TYPE_ID: ClassVar[int] = 9
    group_id: str = f(STRING)


@codec
@record
class ShareGroupPartitionMetadataValue:
    VERSION: ClassVar[int] = 0
    topics: tuple[TopicMetadata, ...] = f(Array(Struct(TopicMetadata)), default=())


@codec
@record
class ShareGroupMemberMetadataKey:
    TYPE_ID: ClassVar[int] = 10
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class ShareGroupMemberMetadataValue:
    VERSION: ClassVar[int] = 0
    rack_id: str | None = f(NSTRING, default=None)
    client_id: str = f(STRING)
    client_host: str = f(STRING)
    subscribed_topic_names: tuple[str, ...] = f(Array(STRING), default=())


@codec
@record
class ShareGroupMetadataKey:
    TYPE_ID: ClassVar[int] = 11
    group_id: str = f(STRING)


@codec
@record
class ShareGroupMetadataValue:
    VERSION: ClassVar[int] = 0
    epoch: int = f(INT32)
    metadata_hash: int = f(INT64, default=0)


@codec
@record
class ShareGroupTargetAssignmentMetadataKey:
    TYPE_ID: ClassVar[int] = 12
    group_id: str = f(STRING)


@codec
@record
class ShareGroupTargetAssignmentMetadataValue:
    VERSION: ClassVar[int] = 0
    assignment_epoch: int = f(INT32)
    timestamp: int = f(INT64, default=0)


@codec
@record
class ShareGroupTargetAssignmentMemberKey:
    TYPE_ID: ClassVar[int] = 13
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class ShareGroupTargetAssignmentMemberValue:
    VERSION: ClassVar[int] = 0
    topic_partitions: tuple[TopicPartitions, ...] = f(_TP, default=())


@codec
@record
class ShareGroupCurrentMemberAssignmentKey:
    TYPE_ID: ClassVar[int] = 14
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class ShareGroupCurrentMemberAssignmentValue:
    VERSION: ClassVar[int] = 0
    member_epoch: int = f(INT32)
    previous_member_epoch: int = f(INT32)
    state: int = f(INT8)
    assigned_partitions: tuple[TopicPartitions, ...] = f(_TP, default=())


@codec
@record
class ShareGroupStatePartitionMetadataKey:
    TYPE_ID: ClassVar[int] = 15
    group_id: str = f(STRING)


@codec
@record
class TopicPartitionsInfo:
    topic_id: uuid.UUID = f(UUID)
    topic_name: str = f(STRING)
    partitions: tuple[int, ...] = f(Array(INT32), default=())


@codec
@record
class ShareTopicInfo:
    topic_id: uuid.UUID = f(UUID)
    topic_name: str = f(STRING)


@codec
@record
class ShareGroupStatePartitionMetadataValue:
    VERSION: ClassVar[int] = 0
    initializing_topics: tuple[TopicPartitionsInfo, ...] = f(
        Array(Struct(TopicPartitionsInfo)), default=()
    )
    initialized_topics: tuple[TopicPartitionsInfo, ...] = f(
        Array(Struct(TopicPartitionsInfo)), default=()
    )
    deleting_topics: tuple[ShareTopicInfo, ...] = f(Array(Struct(ShareTopicInfo)), default=())


# ---------------------------------------------------------------------------------------
# Share-partition state (Kafka's share coordinator records)


@codec
@record
class ShareStateBatch:
    """Kafka's ``StateBatch`` of ShareSnapshotValue and ShareUpdateValue: a range of offsets in
    one delivery state (0 available, 2 acknowledged, 4 archived) with one delivery count."""

    first_offset: int = f(INT64)
    last_offset: int = f(INT64)
    delivery_state: int = f(INT8)
    delivery_count: int = f(INT16)


_BATCHES = Array(Struct(ShareStateBatch))


@codec
@record
class ShareSnapshotKey:
    """The full state of one share partition (Kafka's type 0 in ``__share_group_state``)."""

    TYPE_ID: ClassVar[int] = 1002
    group_id: str = f(STRING)
    topic_id: uuid.UUID = f(UUID)
    partition: int = f(INT32)


@codec
@record
class ShareSnapshotValue:
    VERSION: ClassVar[int] = 0
    snapshot_epoch: int = f(INT32)
    state_epoch: int = f(INT32)
    leader_epoch: int = f(INT32)
    start_offset: int = f(INT64)
    # A tagged field in Kafka (tag 0, 4.2+, KIP-1226); a plain field with Kafka's default here.
    delivery_complete_count: int = f(INT32, default=-1)
    create_timestamp: int = f(INT64)
    write_timestamp: int = f(INT64)
    state_batches: tuple[ShareStateBatch, ...] = f(_BATCHES, default=())


@codec
@record
class ShareUpdateKey:
    """A delta of one share partition's state (Kafka's type 1 in ``__share_group_state``):
    merged into the state the ShareSnapshot and the ShareUpdates before it give. Compaction
    keeps it until a later ShareSnapshot record (value or tombstone) of the same key fields
    exists (``SNAPSHOT_TYPE_ID``); ShareUpdates never supersede each other."""

    TYPE_ID: ClassVar[int] = 1003
    SNAPSHOT_TYPE_ID: ClassVar[int] = ShareSnapshotKey.TYPE_ID
    group_id: str = f(STRING)
    topic_id: uuid.UUID = f(UUID)
    partition: int = f(INT32)


@codec
@record
class ShareUpdateValue:
    VERSION: ClassVar[int] = 0
    snapshot_epoch: int = f(INT32)
    leader_epoch: int = f(INT32)
    start_offset: int = f(INT64)  # -1: unchanged
    # A tagged field in Kafka (tag 0, 4.2+, KIP-1226); a plain field with Kafka's default here.
    delivery_complete_count: int = f(INT32, default=-1)
    state_batches: tuple[ShareStateBatch, ...] = f(_BATCHES, default=())
