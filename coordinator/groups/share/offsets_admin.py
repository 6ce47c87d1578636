"""The share group offset admin APIs as pure handlers: DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets (KIP-932).

Kafka splits each of these between the group coordinator (ShareGroupStatePartitionMetadata) and
the share coordinator (ReadShareGroupStateSummary, InitializeShareGroupState,
DeleteShareGroupState); here a group's share-partition state lives on the group's own
coordinator partition, so each is one event there:

- describe (a read): the start offset of each share partition, its leader epoch and, from v1,
  its lag (``log end offset - start offset - delivery complete count``, Kafka's formula), for the
  requested topics or, with topics null, every partition the group has initialized. Absence of
  data is not an error, as in Kafka: an unknown topic gives start offset -1 and the zero topic
  id; a partition without state gives start offset -1, leader epoch 0 and lag -1;
- alter (a write): the group (created if absent) must be empty; the group epoch is bumped and
  each valid partition gets a fresh ShareSnapshot at the given start offset with the new group
  epoch as its state epoch (Kafka's ``alterShareGroupOffsets`` + InitializeShareGroupState): its
  in-flight state is cleared, and the partition is recorded initialized;
- delete (a write): the group must exist and be empty; each requested topic the group has
  initialized loses its share state (ShareSnapshot tombstones, Kafka's DeleteShareGroupState)
  and leaves InitializedTopics. The group epoch is not bumped, as in Kafka: the next heartbeat
  of a member subscribed to the topic initializes it again (start offset -1), with the group
  epoch of that heartbeat as its state epoch.

Errors that fail the whole request are raised as ``CoordinatorError`` before any record.

Where this differs from Kafka:

- the leader epoch is not kept with the share state (every partition is this node's): a
  partition reports -1 while its state is as an initial snapshot left it, 0 (the leader epoch
  writes carry) once written or in flight; Kafka reports 0 as soon as the leader loaded it;
- a partition whose log the data plane does not have gets lag -1 (Kafka: the error of its
  ListOffsets for that partition);
- delete is one write (tombstones and the new InitializedTopics): no DeletingTopics step; and
  a share group with no ShareGroupStatePartitionMetadata record at all answers each topic
  UNKNOWN_TOPIC_OR_PARTITION (Kafka answers no topics).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coordinator.groups.modern.subscription import next_group_epoch
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result
from coordinator.runtime.result import Record
from protocol import ErrorCode

from . import records, state_records
from .env import ShareLogs, TopicLookup
from .model import ShareGroup
from .partition import SharePartition

log = get_logger("coordinator.groups.share")

ZERO_TOPIC_ID = uuid.UUID(int=0)
"""Kafka's ``Uuid.ZERO_UUID``: the topic id of a topic the metadata does not know."""
UNINITIALIZED_START_OFFSET = -1
"""Kafka's ``PartitionFactory.UNINITIALIZED_START_OFFSET``."""
UNINITIALIZED_LAG = -1
"""Kafka's ``PartitionFactory.UNINITIALIZED_LAG``."""
DEFAULT_LEADER_EPOCH = 0
"""Kafka's ``PartitionFactory.DEFAULT_LEADER_EPOCH``: reported for a partition without state."""
INITIAL_LEADER_EPOCH = -1
"""The leader epoch of an initial snapshot (InitializeShareGroupState writes -1)."""

UNKNOWN_TOPIC_OR_PARTITION_MESSAGE = "This server does not host this topic-partition."
"""Kafka's ``Errors.UNKNOWN_TOPIC_OR_PARTITION.message()``."""
NO_OFFSETS_TO_DELETE_MESSAGE = "There is no offset information to delete."
NON_EMPTY_GROUP_MESSAGE = "The group is not empty."
"""Kafka's ``Errors.NON_EMPTY_GROUP.message()``."""
NEGATIVE_PARTITION_MESSAGE = "The partition id cannot be a negative number."
"""Kafka's share coordinator's ``NEGATIVE_PARTITION_ID``."""


# ------------------------------------------------------------------------------ results
@dataclass(frozen=True, slots=True)
class DescribedPartition:
    """A DescribeShareGroupOffsetsResponsePartition."""

    partition_index: int
    start_offset: int = UNINITIALIZED_START_OFFSET
    leader_epoch: int = DEFAULT_LEADER_EPOCH
    lag: int = UNINITIALIZED_LAG
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class DescribedTopic:
    """A DescribeShareGroupOffsetsResponseTopic."""

    topic_name: str
    topic_id: uuid.UUID
    partitions: tuple[DescribedPartition, ...]


@dataclass(frozen=True, slots=True)
class AlteredPartition:
    """An AlterShareGroupOffsetsResponsePartition."""

    partition_index: int
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class AlteredTopic:
    """An AlterShareGroupOffsetsResponseTopic."""

    topic_name: str
    topic_id: uuid.UUID
    partitions: tuple[AlteredPartition, ...]


@dataclass(frozen=True, slots=True)
class DeletedTopic:
    """A DeleteShareGroupOffsetsResponseTopic."""

    topic_name: str
    topic_id: uuid.UUID = ZERO_TOPIC_ID
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None


# ------------------------------------------------------------------------------ lookups
def _share_group(shard: Any, group_id: str, create: bool) -> ShareGroup:
    """The share group (a new, empty one when absent and ``create``); GROUP_ID_NOT_FOUND when
    it is absent otherwise, or another type's group (Kafka's messages)."""
    group = shard.groups.get(group_id)
    if group is None:
        if create:
            return ShareGroup(group_id)  # materialised when its epoch record replays
        raise CoordinatorError(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
    if not isinstance(group, ShareGroup):
        raise CoordinatorError(ErrorCode.group_id_not_found,
                               f"Group {group_id} is not a share group.")
    return group


def _require_empty(group: ShareGroup) -> None:
    if group.members:
        raise CoordinatorError(ErrorCode.non_empty_group, NON_EMPTY_GROUP_MESSAGE)


def _state(shard: Any, group_id: str) -> Mapping[tuple[uuid.UUID, int], SharePartition]:
    found: Mapping[tuple[uuid.UUID, int], SharePartition] = \
        shard.share_partitions.get(group_id, {})
    return found


# ------------------------------------------------------------------------------ describe
def _leader_epoch(sp: SharePartition) -> int:
    """The leader epoch the share state was last written with: -1 while it is as an initial
    snapshot left it (nothing written since, nothing in flight), else the one writes carry."""
    if sp.updates_since_snapshot == 0 and sp.in_flight_count() == 0:
        return INITIAL_LEADER_EPOCH
    return state_records.LEADER_EPOCH


def _described(sp: SharePartition | None, partition: int, topic: str,
               logs: ShareLogs) -> DescribedPartition:
    """One partition's summary (Kafka's ReadShareGroupStateSummary and lag computation)."""
    if sp is None:
        return DescribedPartition(partition)
    epoch = _leader_epoch(sp)
    if sp.start_offset < 0:
        return DescribedPartition(partition, sp.start_offset, epoch)
    offsets = logs.offsets(topic, partition)
    lag = UNINITIALIZED_LAG if offsets is None else \
        offsets[1] - sp.start_offset - sp.delivery_complete_count()
    return DescribedPartition(partition, sp.start_offset, epoch, lag)


def describe_offsets(shard: Any, now_ms: int, topics: TopicLookup, logs: ShareLogs,
                     group_id: str,
                     requested: Sequence[tuple[str, Sequence[int]]] | None
                     ) -> tuple[DescribedTopic, ...]:
    """DescribeShareGroupOffsets for one group (a read handler: no records). ``requested`` is
    (topic name, partitions) per topic, or None for every initialized partition of the group.
    Neither the group's existence nor its type is checked, as in Kafka: a group without share
    state describes as start offsets -1 (or, with topics null, as no topics)."""
    state = _state(shard, group_id)
    out: list[DescribedTopic] = []
    if requested is None:
        group = shard.groups.get(group_id)
        initialized = group.initialized if isinstance(group, ShareGroup) else {}
        for topic_id, (_, held) in sorted(initialized.items(), key=lambda kv: kv[1][0]):
            topic = topics.topic_by_id(topic_id)
            if topic is None:
                continue  # deleted meanwhile: Kafka leaves it out too
            out.append(DescribedTopic(topic.name, topic_id, tuple(
                _described(state.get((topic_id, p)), p, topic.name, logs)
                for p in sorted(held))))
        return tuple(out)
    unknown: list[DescribedTopic] = []
    for name, partitions in requested:
        topic = topics.topic(name)
        if topic is None:
            # Absence of data, not an error (Kafka, as OffsetFetch): after the known topics.
            unknown.append(DescribedTopic(name, ZERO_TOPIC_ID, tuple(
                DescribedPartition(p) for p in partitions)))
            continue
        out.append(DescribedTopic(name, topic.topic_id, tuple(
            _described(state.get((topic.topic_id, p)), p, name, logs) for p in partitions)))
    return tuple(out + unknown)


# ------------------------------------------------------------------------------ alter
def alter_offsets(shard: Any, now_ms: int, topics: TopicLookup, group_id: str,
                  requested: Sequence[tuple[str, Sequence[tuple[int, int]]]]) -> Result:
    """AlterShareGroupOffsets: ``requested`` is (topic name, (partition, start offset) ...) per
    topic. The response is a tuple of :class:`AlteredTopic`: unknown topics first, then the
    others in request order (Kafka's KafkaApis answers unknown topics itself, before the
    coordinator's answer)."""
    group = _share_group(shard, group_id, create=True)
    _require_empty(group)
    epoch = next_group_epoch(group)
    out: list[Record] = [records.group_epoch(group_id, epoch)]
    state = _state(shard, group_id)
    initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = dict(group.initialized)
    offsets: dict[tuple[uuid.UUID, int], int] = {}
    unknown: list[AlteredTopic] = []
    known: list[AlteredTopic] = []
    for name, partitions in requested:
        topic = topics.topic(name)
        if topic is None:
            unknown.append(AlteredTopic(name, ZERO_TOPIC_ID, tuple(
                AlteredPartition(p, ErrorCode.unknown_topic_or_partition,
                                 UNKNOWN_TOPIC_OR_PARTITION_MESSAGE)
                for p, _ in partitions)))
            continue
        answers: list[AlteredPartition] = []
        valid: set[int] = set()
        for p, start_offset in partitions:
            if p >= topic.partitions:
                answers.append(AlteredPartition(p, ErrorCode.unknown_topic_or_partition,
                                                UNKNOWN_TOPIC_OR_PARTITION_MESSAGE))
            elif p < 0:
                answers.append(AlteredPartition(p, ErrorCode.invalid_request,
                                                NEGATIVE_PARTITION_MESSAGE))
            else:
                answers.append(AlteredPartition(p))
                offsets[(topic.topic_id, p)] = start_offset  # the last one wins, as in Kafka
                valid.add(p)
        if valid:
            had = initialized.get(topic.topic_id)
            initialized[topic.topic_id] = (name, (had[1] if had else frozenset()) | valid)
        known.append(AlteredTopic(name, topic.topic_id, tuple(answers)))
    for (topic_id, p), start_offset in offsets.items():
        old = state.get((topic_id, p))
        out.append(state_records.initial_snapshot(
            group_id, topic_id, p, start_offset, epoch, now_ms,
            snapshot_epoch=0 if old is None else old.snapshot_epoch + 1))
    if offsets:
        out.append(records.state_partition_metadata(group_id, initialized))
    log.info("altered share group offsets", group_id=group_id, group_epoch=epoch,
             partitions=len(offsets))
    return Result(out, tuple(unknown + known))


# ------------------------------------------------------------------------------ delete
def delete_offsets(shard: Any, now_ms: int, topics: TopicLookup, group_id: str,
                   names: Iterable[str]) -> Result:
    """DeleteShareGroupOffsets: the share state of each named topic the group has initialized
    is removed. The response is a tuple of :class:`DeletedTopic`: the deleted topics, then the
    refused ones (Kafka's order), each in request order."""
    group = _share_group(shard, group_id, create=False)
    _require_empty(group)
    state = _state(shard, group_id)
    initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = dict(group.initialized)
    deleted: list[DeletedTopic] = []
    refused: list[DeletedTopic] = []
    out: list[Record] = []
    done: set[uuid.UUID] = set()
    for name in names:
        topic = topics.topic(name)
        if topic is None:
            refused.append(DeletedTopic(name, ZERO_TOPIC_ID, ErrorCode.unknown_topic_or_partition,
                                        UNKNOWN_TOPIC_OR_PARTITION_MESSAGE))
            continue
        topic_id = topic.topic_id
        if topic_id in done:
            continue  # named twice: answered once, as Kafka's map of deleted topics does
        entry = initialized.pop(topic_id, None)
        if entry is None:
            refused.append(DeletedTopic(name, ZERO_TOPIC_ID, ErrorCode.unknown_topic_or_partition,
                                        NO_OFFSETS_TO_DELETE_MESSAGE))
            continue
        done.add(topic_id)
        partitions = set(entry[1]) | {p for (tid, p) in state if tid == topic_id}
        out += [state_records.tombstone(group_id, topic_id, p) for p in sorted(partitions)]
        deleted.append(DeletedTopic(name, topic_id))
    if done:
        out.append(records.state_partition_metadata(group_id, initialized))
        log.info("deleted share group offsets", group_id=group_id,
                 topics=[t.topic_name for t in deleted])
    return Result(out, tuple(deleted + refused))
