"""The states a modern group reports (ConsumerGroupDescribe, ShareGroupDescribe,
StreamsGroupDescribe, ListGroups): one vocabulary, as Kafka's ``org.apache.kafka.common
.GroupState`` (KIP-1043). Each type's ``state`` property uses the ones it can be in: consumer
groups Empty, Assigning, Reconciling, Stable; share groups Empty, Stable; streams groups also
NotReady; Dead only in a describe of a group that is not there."""

from __future__ import annotations

from enum import StrEnum


class GroupState(StrEnum):
    """``str()`` is Kafka's name."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"
