"""Kafka's internal topics in the metadata image: ``__consumer_offsets``, ``__transaction_state``
and ``__share_group_state``, listed by Metadata with the internal flag, as Kafka lists them.

They are the coordinator store's partitions, not topics of the data plane: each has
``offsets.topic.num.partitions`` partitions (the store's; a transactional id's and a share
group's records live on the coordinator partition of the id or group), Kafka's configs for the
offsets topic, and an id derived from the cluster id and the name, so it is the same after a
restart. They are put in the image after the metadata log is replayed and are not written to
it; a topic of one of these names that an older build created (a client's Metadata request
auto-created a data topic ``__consumer_offsets``) is replaced. No request creates them
(``coordinator/metadata/topic_admin.py``), Produce refuses them (INVALID_TOPIC_EXCEPTION), and
Fetch and ListOffsets read them from the store (``coordinator/topiclog/internal.py``).
"""

from __future__ import annotations

import uuid

from .image import MetadataImage, TopicImage
from .topic_names import INTERNAL_TOPICS

_NAMESPACE = uuid.UUID("7b1c2f1e-5d0a-4d59-9a43-0c6f1f8e2a36")


def internal_topic_id(cluster_id: str, name: str) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, f"{cluster_id}/{name}")


def install(image: MetadataImage, cluster_id: str, num_partitions: int,
            segment_bytes: int) -> list[TopicImage]:
    """Put the internal topics in ``image`` (before anyone listens to it)."""
    configs = {"cleanup.policy": "compact", "compression.type": "producer",
               "segment.bytes": str(segment_bytes)}
    installed = []
    for name in sorted(INTERNAL_TOPICS):
        if image.topic(name) is not None:
            image.delete_topic(name)
        installed.append(image.create_topic(name, num_partitions, configs,
                                            internal_topic_id(cluster_id, name)))
    return installed
