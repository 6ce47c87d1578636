"""Share-partition state for newly subscribed topics: created by the heartbeat (or topic change)
that first sees them, in the same write (Kafka sends InitializeShareGroupState to the share
coordinator after the heartbeat; here the state lives on the group's own partition).

A topic new to the group starts at offset -1, so ``share.auto.offset.reset`` applies at the
first fetch; partitions added to a topic the group already knows start at 0, so records
produced before they were initialized are not skipped (Kafka 4.3).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from coordinator.runtime.result import Record

from . import records, state_records
from .model import ShareGroup, SubscribedTopic

UNINITIALIZED_START_OFFSET = -1


def initialize_partitions(group: ShareGroup, metadata: Mapping[str, SubscribedTopic],
                          state_epoch: int, now_ms: int) -> list[Record]:
    """Initial share-partition snapshots for the partitions of ``metadata``'s topics that have
    no state yet, and the group's ShareGroupStatePartitionMetadata listing them; nothing when
    every partition has state."""
    out: list[Record] = []
    initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = dict(group.initialized)
    for topic in metadata.values():
        known = initialized.get(topic.topic_id)
        have = known[1] if known is not None else frozenset()
        start = UNINITIALIZED_START_OFFSET if known is None else 0
        new = [p for p in range(topic.partitions) if p not in have]
        if not new:
            continue
        for partition in new:
            out.append(state_records.initial_snapshot(group.group_id, topic.topic_id, partition,
                                                      start, state_epoch, now_ms))
        initialized[topic.topic_id] = (topic.name, have | frozenset(new))
    if out:
        out.append(records.state_partition_metadata(group.group_id, initialized))
    return out


def forget_deleted_topics(group: ShareGroup, env: Any) -> list[Record]:
    """Tombstones of the share state of the group's initialized topics that no longer exist
    (``env.topics`` has no topic of that id), and the group's initialized topics without
    them."""
    gone = [topic_id for topic_id in group.initialized
            if env.topics.topic_by_id(topic_id) is None]
    if not gone:
        return []
    out = [state_records.tombstone(group.group_id, topic_id, partition)
           for topic_id in gone for partition in sorted(group.initialized[topic_id][1])]
    kept = {topic_id: entry for topic_id, entry in group.initialized.items()
            if topic_id not in gone}
    out.append(records.state_partition_metadata(group.group_id, kept))
    return out
