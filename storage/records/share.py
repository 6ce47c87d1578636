"""KIP-932 share group records (types 9 to 15)."""

from __future__ import annotations

import uuid
from typing import ClassVar

from storage.codec import INT8, INT32, INT64, NSTRING, STRING, UUID, Array, Struct, codec, f, record
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
