"""KIP-1071 streams group records (types 17 to 23; Kafka 4.3's).

Type 18 (StreamsGroupPartitionMetadata) was removed in Kafka 4.1: it is read (and not replayed)
so that a store of an older build still loads. Record 22's task lists carry the assignment epoch
of each active task (Kafka's tagged ``AssignmentEpochs``; a plain field here, as every tagged
field of this store, see FORMAT.md): offset commits of a member at an older epoch are checked
against them.
"""

from __future__ import annotations

from typing import ClassVar

from storage.codec import (
    INT8,
    INT16,
    INT32,
    INT64,
    NSTRING,
    STRING,
    UINT16,
    Array,
    NStruct,
    Struct,
    codec,
    f,
    record,
)
from storage.records.common import KeyValue, TopicMetadata


@codec
@record
class TaskIds:
    subtopology_id: str = f(STRING)
    partitions: tuple[int, ...] = f(Array(INT32), default=())


_TASKS = Array(Struct(TaskIds))


@codec
@record
class TaskIdsWithEpochs:
    """Record 22's ``TaskIds``: the partitions of one subtopology and, for active tasks, the
    assignment epoch of each (same order; empty for standby and warm-up tasks)."""

    subtopology_id: str = f(STRING)
    partitions: tuple[int, ...] = f(Array(INT32), default=())
    assignment_epochs: tuple[int, ...] = f(Array(INT32), default=())


_EPOCH_TASKS = Array(Struct(TaskIdsWithEpochs))


@codec
@record
class StreamsGroupMetadataKey:
    TYPE_ID: ClassVar[int] = 17
    group_id: str = f(STRING)


@codec
@record
class StreamsGroupMetadataValue:
    VERSION: ClassVar[int] = 0
    epoch: int = f(INT32)
    metadata_hash: int = f(INT64, default=0)
    validated_topology_epoch: int = f(INT32, default=-1)
    assignment_configs: tuple[KeyValue, ...] = f(Array(Struct(KeyValue)), default=(),
                                                  name="LastAssignmentConfigs")


@codec
@record
class StreamsGroupPartitionMetadataKey:
    TYPE_ID: ClassVar[int] = 18
    group_id: str = f(STRING)


@codec
@record
class StreamsGroupPartitionMetadataValue:
    VERSION: ClassVar[int] = 0
    topics: tuple[TopicMetadata, ...] = f(Array(Struct(TopicMetadata)), default=())


@codec
@record
class StreamsGroupMemberMetadataKey:
    TYPE_ID: ClassVar[int] = 19
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class Endpoint:
    host: str = f(STRING)
    port: int = f(UINT16)


@codec
@record
class StreamsGroupMemberMetadataValue:
    VERSION: ClassVar[int] = 0
    instance_id: str | None = f(NSTRING, default=None)
    rack_id: str | None = f(NSTRING, default=None)
    client_id: str = f(STRING)
    client_host: str = f(STRING)
    rebalance_timeout_ms: int = f(INT32, default=-1)
    topology_epoch: int = f(INT32)
    process_id: str = f(STRING)
    user_endpoint: Endpoint | None = f(NStruct(Endpoint), default=None)
    client_tags: tuple[KeyValue, ...] = f(Array(Struct(KeyValue)), default=())


@codec
@record
class StreamsGroupTargetAssignmentMetadataKey:
    TYPE_ID: ClassVar[int] = 20
    group_id: str = f(STRING)


@codec
@record
class StreamsGroupTargetAssignmentMetadataValue:
    VERSION: ClassVar[int] = 0
    assignment_epoch: int = f(INT32)
    timestamp: int = f(INT64, default=0)


@codec
@record
class StreamsGroupTargetAssignmentMemberKey:
    TYPE_ID: ClassVar[int] = 21
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class StreamsGroupTargetAssignmentMemberValue:
    VERSION: ClassVar[int] = 0
    active_tasks: tuple[TaskIds, ...] = f(_TASKS, default=())
    standby_tasks: tuple[TaskIds, ...] = f(_TASKS, default=())
    warmup_tasks: tuple[TaskIds, ...] = f(_TASKS, default=())


@codec
@record
class StreamsGroupCurrentMemberAssignmentKey:
    TYPE_ID: ClassVar[int] = 22
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class StreamsGroupCurrentMemberAssignmentValue:
    VERSION: ClassVar[int] = 0
    member_epoch: int = f(INT32)
    previous_member_epoch: int = f(INT32)
    state: int = f(INT8)
    active_tasks: tuple[TaskIdsWithEpochs, ...] = f(_EPOCH_TASKS, default=())
    standby_tasks: tuple[TaskIdsWithEpochs, ...] = f(_EPOCH_TASKS, default=())
    warmup_tasks: tuple[TaskIdsWithEpochs, ...] = f(_EPOCH_TASKS, default=())
    active_tasks_pending_revocation: tuple[TaskIdsWithEpochs, ...] = f(_EPOCH_TASKS, default=())
    standby_tasks_pending_revocation: tuple[TaskIdsWithEpochs, ...] = f(_EPOCH_TASKS,
                                                                        default=())
    warmup_tasks_pending_revocation: tuple[TaskIdsWithEpochs, ...] = f(_EPOCH_TASKS,
                                                                       default=())


@codec
@record
class StreamsGroupTopologyKey:
    TYPE_ID: ClassVar[int] = 23
    group_id: str = f(STRING)


@codec
@record
class TopicConfig:
    key: str = f(STRING, name="key")
    value: str = f(STRING, name="value")


@codec
@record
class StreamsTopicInfo:
    name: str = f(STRING)
    partitions: int = f(INT32, default=0)
    replication_factor: int = f(INT16, default=0)
    topic_configs: tuple[TopicConfig, ...] = f(Array(Struct(TopicConfig)), default=())


@codec
@record
class CopartitionGroup:
    source_topics: tuple[int, ...] = f(Array(INT16), default=())
    source_topic_regex: tuple[int, ...] = f(Array(INT16), default=())
    repartition_source_topics: tuple[int, ...] = f(Array(INT16), default=())


@codec
@record
class Subtopology:
    subtopology_id: str = f(STRING)
    source_topics: tuple[str, ...] = f(Array(STRING), default=())
    source_topic_regex: tuple[str, ...] = f(Array(STRING), default=())
    state_changelog_topics: tuple[StreamsTopicInfo, ...] = f(
        Array(Struct(StreamsTopicInfo)), default=()
    )
    repartition_sink_topics: tuple[str, ...] = f(Array(STRING), default=())
    repartition_source_topics: tuple[StreamsTopicInfo, ...] = f(
        Array(Struct(StreamsTopicInfo)), default=()
    )
    copartition_groups: tuple[CopartitionGroup, ...] = f(
        Array(Struct(CopartitionGroup)), default=()
    )


@codec
@record
class StreamsGroupTopologyValue:
    VERSION: ClassVar[int] = 0
    epoch: int = f(INT32)
    subtopologies: tuple[Subtopology, ...] = f(Array(Struct(Subtopology)), default=())
