"""Our own record of deferred imbalance resolution (seed 004, Design II; type 1020, not a
Kafka type): the partitions of a consumer group member that left or was fenced, held
unassigned in the target until ``DeadlineMs``, and why (``Reason``: left, session-expired,
rebalance-timeout). Keyed by group and the member whose partitions they were; rewritten with
fewer partitions when a joining member takes some, a tombstone once none are held."""

from __future__ import annotations

from typing import ClassVar

from storage.codec import INT64, STRING, Array, Struct, codec, f, record
from storage.records.common import TopicPartitions


@codec
@record
class ConsumerGroupHeldPartitionsKey:
    TYPE_ID: ClassVar[int] = 1020
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class ConsumerGroupHeldPartitionsValue:
    VERSION: ClassVar[int] = 0
    topic_partitions: tuple[TopicPartitions, ...] = f(Array(Struct(TopicPartitions)),
                                                      default=())
    deadline_ms: int = f(INT64, default=0)
    reason: str = f(STRING, default="")
