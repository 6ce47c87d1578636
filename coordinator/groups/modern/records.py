"""Record values every modern group type builds alike (Kafka's
``GroupCoordinatorRecordHelpers``): the topics of a subscription metadata record."""

from __future__ import annotations

from collections.abc import Iterable

from storage.records import TopicMetadata

from .subscription import SubscribedTopic


def subscription_topics(topics: Iterable[SubscribedTopic]) -> tuple[TopicMetadata, ...]:
    """``<Type>GroupPartitionMetadataValue.Topics``, by topic name."""
    return tuple(TopicMetadata(topic_id=t.topic_id, topic_name=t.name, num_partitions=t.partitions)
                 for t in sorted(topics, key=lambda t: t.name))
