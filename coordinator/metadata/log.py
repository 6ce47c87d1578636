"""Topic metadata is records too: ``TopicMetadata`` records in ``<log.dirs>/__cluster_metadata-0``,
with the ACL records (``AccessControlEntry``, ``RemoveAccessControlEntry``) and the GROUP and
CLIENT_METRICS configs (``ConfigRecord``, ``config_resources``) beside them.

On start the log is replayed into the metadata image, so topics survive a restart with the same
ids. A change is written and fsynced first, then applied to the image, then answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coordinator.observability.logs import get_logger
from coordinator.runtime.clock import Clock
from storage.log import PartitionLog
from storage.records import TopicMetadataKey, TopicMetadataValue, decode_record, encode_record

from .image import MetadataImage, TopicImage

METADATA_TOPIC = "__cluster_metadata"
SEGMENT_BYTES = 16 * 1024 * 1024

log = get_logger("coordinator.metadata_log")


class MetadataLog:
    def __init__(self, plog: PartitionLog, clock: Clock) -> None:
        self._log = plog
        self._clock = clock
        self._lock = asyncio.Lock()

    @classmethod
    def open(cls, log_dir: str | Path, image: MetadataImage, clock: Clock,
             replay_other: Callable[[Any, Any], Any] | None = None) -> MetadataLog:
        """Open the log and replay it into ``image`` (topics and config resources); every other
        record (the ACLs, SCRAM credentials) goes to ``replay_other``."""
        plog = PartitionLog.open(log_dir, 0, SEGMENT_BYTES, topic=METADATA_TOPIC)
        count = 0
        for _offset, _ts, key_bytes, value_bytes in plog.read():
            key, value = decode_record(key_bytes, value_bytes)
            if isinstance(key, TopicMetadataKey):
                _apply(image, key, value)
                count += 1
            elif image.configs.replay(key, value):
                count += 1
            elif replay_other is not None:
                replay_other(key, value)
        log.info("metadata loaded", records=count, topics=len(image))
        return cls(plog, clock)

    @property
    def lock(self) -> asyncio.Lock:
        """Held by whoever validates and then writes a topic change, so changes do not race."""
        return self._lock

    async def write(self, records: list[tuple[Any, Any | None]]) -> None:
        """Append and fsync; raises ``OSError`` if the records could not be made durable."""
        encoded = [encode_record(key, value) for key, value in records]
        self._log.append_batch(encoded, self._clock.now_ms())
        await asyncio.to_thread(self._log.flush)

    def close(self) -> None:
        self._log.close()


def topic_record(topic: TopicImage) -> tuple[TopicMetadataKey, TopicMetadataValue]:
    return TopicMetadataKey(name=topic.name), TopicMetadataValue(
        topic_id=topic.topic_id, num_partitions=topic.partitions, configs=dict(topic.configs))


def _apply(image: MetadataImage, key: TopicMetadataKey, value: TopicMetadataValue | None) -> None:
    existing = image.topic(key.name)
    if value is None:
        if existing is not None:
            image.delete_topic(key.name)
        return
    if existing is None:
        image.create_topic(key.name, value.num_partitions, value.configs, value.topic_id)
        return
    if existing.partitions < value.num_partitions:
        image.add_partitions(key.name, value.num_partitions)
    if dict(existing.configs) != dict(value.configs):
        image.set_configs(key.name, value.configs)
