"""What the lag-aware assignor (seed 001) needs from the coordinator: per partition, the log
start and end offsets from the data plane and the group's committed offset."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from assignors import NO_OFFSET, PartitionOffsets

LAG_ASSIGNOR = "lag"

LogOffsets = Callable[[str, int], tuple[int, int] | None]


def topic_offsets(shard: Any, group_id: str, metadata: Mapping[str, Any],
                  log_offsets: LogOffsets | None) -> dict[str, PartitionOffsets]:
    """``PartitionOffsets`` of every subscribed topic, by topic name. A partition with no log
    (no data plane, or not written yet) counts as empty."""
    committed = shard.offsets.group(group_id)
    out: dict[str, PartitionOffsets] = {}
    for name, topic in metadata.items():
        starts, ends, commits = [], [], []
        for partition in range(topic.partitions):
            found = log_offsets(name, partition) if log_offsets is not None else None
            start, end = found if found is not None else (0, 0)
            starts.append(start)
            ends.append(end)
            offset = committed.get((name, partition))
            commits.append(offset.offset if offset is not None else NO_OFFSET)
        out[name] = PartitionOffsets(tuple(starts), tuple(ends), tuple(commits))
    return out
