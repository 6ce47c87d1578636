"""Interactive-query endpoints (KIP-1071): which partitions each member with a user endpoint
serves, as StreamsGroupHeartbeat returns them (``PartitionsByUserEndpoint``).

An active task (S, p) serves partition p of each of S's source and repartition-source topics
that has more than p partitions; standby tasks likewise for the standby list (changelog topics
are not listed). A topology that is not configured gives empty lists (Kafka 4.3 fails the
heartbeat with UNKNOWN_SERVER_ERROR there; returning the endpoints without partitions keeps the
members going).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .model import Endpoint, StreamsGroupMember, Tasks

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class EndpointPartitions:
    endpoint: Endpoint
    active: TopicPartitions
    standby: TopicPartitions


def _partitions(tasks: Tasks, configured: Any) -> TopicPartitions:
    if configured is None or configured.subtopologies is None:
        return ()
    by_topic: dict[str, set[int]] = {}
    for subtopology, partitions in tasks.items():
        sub = configured.subtopologies.get(subtopology)
        if sub is None:
            continue
        for topic, count in input_topics(sub).items():
            for p in partitions:
                if p < count:
                    by_topic.setdefault(topic, set()).add(p)
    return tuple((t, tuple(sorted(p))) for t, p in sorted(by_topic.items()))


def input_topics(sub: Any) -> Mapping[str, int]:
    """A configured subtopology's source and repartition-source topics with their partition
    counts."""
    topics: Mapping[str, int] = sub.input_partitions
    return topics


def partitions_by_endpoint(members: Iterable[StreamsGroupMember], configured: Any
                           ) -> list[EndpointPartitions]:
    """One entry per member with a user endpoint, its currently assigned tasks' partitions."""
    out = []
    for member in members:
        if member.user_endpoint is None:
            continue
        out.append(EndpointPartitions(member.user_endpoint,
                                      _partitions(member.assigned.active, configured),
                                      _partitions(member.assigned.standby, configured)))
    return out
