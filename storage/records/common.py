"""Nested structs shared by several coordinator record values."""

from __future__ import annotations

import uuid

from storage.codec import INT32, STRING, UUID, Array, Struct, codec, f, record


@codec
@record
class TopicPartitions:
    """Kafka's ``TopicPartitions`` / ``TopicPartition`` struct: a topic id and partitions."""

    topic_id: uuid.UUID = f(UUID)
    partitions: tuple[int, ...] = f(Array(INT32), default=())


@codec
@record
class PartitionMetadata:
    partition: int = f(INT32)
    racks: tuple[str, ...] = f(Array(STRING), default=())


@codec
@record
class TopicMetadata:
    """An entry of the ``Topics`` array of the *GroupPartitionMetadataValue records."""

    topic_id: uuid.UUID = f(UUID)
    topic_name: str = f(STRING)
    num_partitions: int = f(INT32)
    partition_metadata: tuple[PartitionMetadata, ...] = f(
        Array(Struct(PartitionMetadata)), default=()
    )


@codec
@record
class KeyValue:
    key: str = f(STRING)
    value: str = f(STRING)
