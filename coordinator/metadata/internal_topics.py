"""Kafka's internal topics in the metadata image: ``__consumer_offsets``, ``__transaction_state``
and ``__share_group_state``, listed by Metadata with the internal flag, as Kafka lists them.

They are the coordinator store's partitions, not topics of the data plane: each has
``offsets.topic.num.partitions`` partitions (the store's; a transactional id's and a share
group's records live on the coordinator partition of the id or group), Kafka's configs for the
offsets topic, and an id derived from the cluster id and the name, so it is the same after a
restart. As in Kafka, each is created on first use and kept: ``__consumer_offsets`` by the
first FindCoordinator for a group, ``__transaction_state`` by the first for a transactional id,
``__share_group_state`` by the first share group heartbeat, any of them by a Metadata request
that names it and allows auto-creation. Creation writes the topic's ``TopicMetadata`` record to
the metadata log, so a restart lists it again; a topic of one of these names that an older
build created as a data topic (a client's Metadata request auto-created ``__consumer_offsets``)
is replaced by the internal one on start. No CreateTopics creates them
(``coordinator/metadata/topic_admin.py``), Produce refuses them (INVALID_TOPIC_EXCEPTION), and
Fetch and ListOffsets read them from the store (``coordinator/topiclog/internal.py``).
"""

from __future__ import annotations

import asyncio
import uuid

from coordinator.observability.logs import get_logger

from .image import MetadataImage, TopicImage
from .log import MetadataLog, topic_record
from .topic_names import INTERNAL_TOPICS

_NAMESPACE = uuid.UUID("7b1c2f1e-5d0a-4d59-9a43-0c6f1f8e2a36")
GROUP_METADATA_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"

log = get_logger("coordinator.internal_topics")


def internal_topic_id(cluster_id: str, name: str) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, f"{cluster_id}/{name}")


class InternalTopics:
    """Creates the internal topics in the image when they are first used, and persists that."""

    def __init__(self, image: MetadataImage, metadata_log: MetadataLog, cluster_id: str,
                 num_partitions: int, segment_bytes: int) -> None:
        self._image = image
        self._metadata_log = metadata_log
        self._cluster_id = cluster_id
        self._num_partitions = num_partitions
        self._configs = {"cleanup.policy": "compact", "compression.type": "producer",
                         "segment.bytes": str(segment_bytes)}
        self._writes: set[asyncio.Task[None]] = set()

    def install_created(self) -> list[TopicImage]:
        """On start, after the metadata log's replay: the internal topics it holds (created
        earlier, or a data topic of such a name), as internal topics."""
        return [self._install(name) for name in sorted(INTERNAL_TOPICS)
                if self._image.topic(name) is not None]

    def ensure(self, name: str) -> TopicImage:
        """The internal topic ``name``, created now if it does not exist yet."""
        existing = self._image.topic(name)
        if existing is not None and existing.topic_id == internal_topic_id(self._cluster_id,
                                                                           name):
            return existing
        topic = self._install(name)
        log.info("internal topic created", topic=name, partitions=topic.partitions)
        task = asyncio.get_running_loop().create_task(self._persist(topic))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        return topic

    def _install(self, name: str) -> TopicImage:
        if self._image.topic(name) is not None:
            self._image.delete_topic(name)
        return self._image.create_topic(name, self._num_partitions, self._configs,
                                        internal_topic_id(self._cluster_id, name))

    async def _persist(self, topic: TopicImage) -> None:
        # Nothing waits for this record: without it a restart lists the topic again on its
        # first use, as a store from before internal topics were listed does.
        try:
            async with self._metadata_log.lock:
                await self._metadata_log.write([topic_record(topic)])
        except OSError as exc:
            log.warning("internal topic not persisted", topic=topic.name, error=str(exc))
