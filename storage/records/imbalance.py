"""Our own records of deferred imbalance resolution (seed 004, Design II; types 1020 and 1021,
not Kafka types): the partitions of a consumer group member (the active tasks of a streams
group member) that left or was fenced, held unassigned in the target until ``DeadlineMs``, and
why (``Reason``: left, session-expired, rebalance-timeout). Keyed by group and the member whose
partitions they were; rewritten with fewer when a joining member takes some, a tombstone once
none are held."""

from __future__ import annotations

from typing import ClassVar

from storage.codec import INT64, STRING, Array, Struct, codec, f, record
from storage.records.common import TopicPartitions
from storage.records.streams import TaskIds


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


@codec
@record
class StreamsGroupHeldTasksKey:
    """The streams group's equivalent (type 1021): a member's active tasks, held."""

    TYPE_ID: ClassVar[int] = 1021
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class StreamsGroupHeldTasksValue:
    VERSION: ClassVar[int] = 0
    active_tasks: tuple[TaskIds, ...] = f(Array(Struct(TaskIds)), default=())
    deadline_ms: int = f(INT64, default=0)
    reason: str = f(STRING, default="")
