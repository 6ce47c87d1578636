"""Records every modern group type builds alike (Kafka's ``GroupCoordinatorRecordHelpers``):
the group's epoch (``<Type>GroupMetadata``, for the types whose value holds nothing more), the
subscription metadata record (``<Type>GroupPartitionMetadata``) and its topics."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from coordinator.runtime.result import Record
from storage.records import TopicMetadata

from .subscription import SubscribedTopic


def subscription_topics(topics: Iterable[SubscribedTopic]) -> tuple[TopicMetadata, ...]:
    """``<Type>GroupPartitionMetadataValue.Topics``, by topic name."""
    return tuple(TopicMetadata(topic_id=t.topic_id, topic_name=t.name, num_partitions=t.partitions)
                 for t in sorted(topics, key=lambda t: t.name))


def partition_metadata(key_class: Any, value_class: Any
                       ) -> Callable[[str, Iterable[SubscribedTopic]], Record]:
    """The builder of a group type's subscription metadata record, from its key and value
    classes."""
    def record(group_id: str, topics: Iterable[SubscribedTopic]) -> Record:
        return key_class(group_id=group_id), value_class(topics=subscription_topics(topics))

    return record


def group_epoch(key_class: Any, value_class: Any) -> Callable[[str, int], Record]:
    """The builder of a group type's group epoch record, from its key and value classes."""
    def record(group_id: str, epoch: int) -> Record:
        return key_class(group_id=group_id), value_class(epoch=epoch)

    return record
