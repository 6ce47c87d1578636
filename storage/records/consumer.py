"""KIP-848 consumer group records (types 3 to 8 and 16)."""

from __future__ import annotations

from typing import ClassVar

from storage.codec import (
    BYTES,
    INT8,
    INT32,
    INT64,
    NSTRING,
    STRING,
    Array,
    NStruct,
    Struct,
    codec,
    f,
    record,
)
from storage.records.common import TopicMetadata, TopicPartitions

_TP = Array(Struct(TopicPartitions))


@codec
@record
class ConsumerGroupMetadataKey:
    TYPE_ID: ClassVar[int] = 3
    group_id: str = f(STRING)


@codec
@record
class ConsumerGroupMetadataValue:
    VERSION: ClassVar[int] = 0
    epoch: int = f(INT32)
    metadata_hash: int = f(INT64, default=0)


@codec
@record
class ConsumerGroupPartitionMetadataKey:
    TYPE_ID: ClassVar[int] = 4
    group_id: str = f(STRING)


@codec
@record
class ConsumerGroupPartitionMetadataValue:
    VERSION: ClassVar[int] = 0
    topics: tuple[TopicMetadata, ...] = f(Array(Struct(TopicMetadata)), default=())


@codec
@record
class ConsumerGroupMemberMetadataKey:
    TYPE_ID: ClassVar[int] = 5
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class ClassicProtocol:
    name: str = f(STRING)
    metadata: bytes = f(BYTES)


@codec
@record
class ClassicMemberMetadata:
    session_timeout_ms: int = f(INT32)
    supported_protocols: tuple[ClassicProtocol, ...] = f(Array(Struct(ClassicProtocol)), default=())


@codec
@record
class ConsumerGroupMemberMetadataValue:
    VERSION: ClassVar[int] = 0
    instance_id: str | None = f(NSTRING, default=None)
    rack_id: str | None = f(NSTRING, default=None)
    client_id: str = f(STRING)
    client_host: str = f(STRING)
    subscribed_topic_names: tuple[str, ...] = f(Array(STRING), default=())
    subscribed_topic_regex: str | None = f(NSTRING, default=None)
    rebalance_timeout_ms: int = f(INT32, default=-1)
    server_assignor: str | None = f(NSTRING, default=None)
    classic_member_metadata: ClassicMemberMetadata | None = f(
        NStruct(ClassicMemberMetadata), default=None
    )


@codec
@record
class ConsumerGroupTargetAssignmentMetadataKey:
    TYPE_ID: ClassVar[int] = 6
    group_id: str = f(STRING)


@codec
@record
class ConsumerGroupTargetAssignmentMetadataValue:
    VERSION: ClassVar[int] = 0
    assignment_epoch: int = f(INT32)
    # Seed 000 (KIP-1263): the time at which the assignment calculation finished.
    timestamp: int = f(INT64, default=0)


@codec
@record
class ConsumerGroupTargetAssignmentMemberKey:
    TYPE_ID: ClassVar[int] = 7
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class ConsumerGroupTargetAssignmentMemberValue:
    VERSION: ClassVar[int] = 0
    topic_partitions: tuple[TopicPartitions, ...] = f(_TP, default=())


@codec
@record
class ConsumerGroupCurrentMemberAssignmentKey:
    TYPE_ID: ClassVar[int] = 8
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class ConsumerGroupCurrentMemberAssignmentValue:
    VERSION: ClassVar[int] = 0
    member_epoch: int = f(INT32)
    previous_member_epoch: int = f(INT32)
    state: int = f(INT8)
    assigned_partitions: tuple[TopicPartitions, ...] = f(_TP, default=())
    partitions_pending_revocation: tuple[TopicPartitions, ...] = f(_TP, default=())


@codec
@record
class ConsumerGroupRegularExpressionKey:
    TYPE_ID: ClassVar[int] = 16
    group_id: str = f(STRING)
    regular_expression: str = f(STRING)


@codec
@record
class ConsumerGroupRegularExpressionValue:
    VERSION: ClassVar[int] = 0
    topics: tuple[str, ...] = f(Array(STRING), default=())
    version: int = f(INT64)
    timestamp: int = f(INT64)
