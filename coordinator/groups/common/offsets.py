"""Committed offsets: their in-memory state, rebuilt from OffsetCommit records, and the pure
handlers that commit and fetch them. Group membership checks come with the group types."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from coordinator.runtime import Result
from protocol import ErrorCode
from storage.records import (
    OffsetCommitKey,
    OffsetCommitValue,
    TxnOffsetCommitKey,
    TxnOffsetCommitValue,
)
from storage.records.registry import fields_decoder

NO_OFFSET = -1
NO_LEADER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class PartitionCommit:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int = -1
    """OffsetCommit v1's commit timestamp; -1 (every later version): the time of the commit."""


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """An OffsetCommit request, whatever its version, for the partitions that passed the
    request-level checks (topic exists, partition in range)."""

    group_id: str
    generation_id: int
    member_id: str
    retention_ms: int
    partitions: Sequence[PartitionCommit]
    api_version: int
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class PendingOffset:
    """A transactional offset waiting for its transaction's marker."""

    producer_epoch: int
    offset: CommittedOffset


class OffsetsState:
    def __init__(self) -> None:
        self._groups: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        self._pending: dict[str, dict[int, dict[tuple[str, int], PendingOffset]]] = {}
        """Pending transactional offsets: group -> producer id -> partition -> offset (Kafka's
        ``pendingTransactionalOffsets``), kept apart from the committed ones."""

    def replay_pending(self, key: TxnOffsetCommitKey, value: TxnOffsetCommitValue | None
                       ) -> None:
        tp = (key.topic, key.partition)
        if value is None:
            by_producer = self._pending.get(key.group)
            if by_producer is None or key.producer_id not in by_producer:
                return
            offsets = by_producer[key.producer_id]
            offsets.pop(tp, None)
            if not offsets:
                del by_producer[key.producer_id]
            if not by_producer:
                del self._pending[key.group]
            return
        self._pending.setdefault(key.group, {}).setdefault(key.producer_id, {})[tp] = \
            PendingOffset(value.producer_epoch, CommittedOffset(
                value.offset, value.leader_epoch, value.metadata, value.commit_timestamp))

    def pending(self, group_id: str, producer_id: int) -> dict[tuple[str, int], PendingOffset]:
        return dict(self._pending.get(group_id, {}).get(producer_id, {}))

    def groups_pending_from(self, producer_id: int) -> list[str]:
        """The groups with pending transactional offsets of ``producer_id``."""
        return [g for g, by_producer in self._pending.items() if producer_id in by_producer]

    def has_pending(self, group_id: str, topic: str | None = None,
                    partition: int | None = None) -> bool:
        """Whether the group (or one of its partitions) has a pending transactional offset."""
        by_producer = self._pending.get(group_id)
        if not by_producer:
            return False
        if topic is None:
            return True
        return any((topic, partition) in offsets for offsets in by_producer.values())

    def pending_tombstones(self, group_id: str, producer_id: int | None = None
                           ) -> list[tuple[TxnOffsetCommitKey, None]]:
        """Tombstones for the group's pending offsets (of one producer, or all)."""
        return [(TxnOffsetCommitKey(group=group_id, topic=topic, partition=partition,
                                    producer_id=pid), None)
                for pid, offsets in self._pending.get(group_id, {}).items()
                if producer_id is None or pid == producer_id
                for topic, partition in offsets]

    def pending_count(self) -> int:
        return sum(len(o) for p in self._pending.values() for o in p.values())

    def replay(self, key: OffsetCommitKey, value: OffsetCommitValue | None) -> None:
        self.replay_fields(key.group, key.topic, key.partition, None if value is None else (
            value.offset, value.leader_epoch, value.metadata, value.commit_timestamp,
            value.expire_timestamp))

    def replay_fields(self, group: str, topic: str, partition: int,
                      value: tuple[int, int, str, int, int] | None) -> None:
        """An OffsetCommit record by its fields: the key's, and the value's as
        ``COMMITTED_FIELDS`` (None: a tombstone)."""
        if value is None:
            offsets = self._groups.get(group)
            if offsets is not None:
                offsets.pop((topic, partition), None)
                if not offsets:
                    del self._groups[group]
            return
        offsets = self._groups.get(group)
        if offsets is None:
            offsets = self._groups[group] = {}
        offsets[(topic, partition)] = _committed(*value)

    def get(self, group_id: str, topic: str, partition: int) -> CommittedOffset | None:
        offsets = self._groups.get(group_id)
        return None if offsets is None else offsets.get((topic, partition))

    def group(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        return dict(self._groups.get(group_id, {}))

    def has_offsets(self, group_id: str) -> bool:
        return group_id in self._groups

    def groups(self) -> Iterable[str]:
        return self._groups.keys()


PartitionErrors = dict[tuple[str, int], ErrorCode]


def commit(state: OffsetsState, request: OffsetCommit, now_ms: int, max_metadata_bytes: int,
           group_exists: bool) -> Result:
    """Records for a commit, and the error of each partition as the response."""
    if request.generation_id >= 0 and not group_exists:
        # Kafka: a commit naming a generation for a group that does not exist is refused;
        # GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before, for compatibility.
        code = (ErrorCode.group_id_not_found if request.api_version >= 9
                else ErrorCode.illegal_generation)
        return Result((), {(p.topic, p.partition): code for p in request.partitions})
    expire = now_ms + request.retention_ms if request.retention_ms >= 0 else -1
    records = []
    errors: PartitionErrors = {}
    for p in request.partitions:
        metadata = p.metadata or ""
        if len(metadata.encode("utf-8")) > max_metadata_bytes:
            errors[(p.topic, p.partition)] = ErrorCode.offset_metadata_too_large
            continue
        records.append((OffsetCommitKey(group=request.group_id, topic=p.topic,
                                        partition=p.partition),
                        OffsetCommitValue(offset=p.offset, leader_epoch=p.leader_epoch,
                                          metadata=metadata,
                                          commit_timestamp=now_ms if p.commit_timestamp == -1
                                          else p.commit_timestamp,
                                          expire_timestamp=expire)))
        errors[(p.topic, p.partition)] = ErrorCode.none
    return Result(records, errors)


def fetch(state: OffsetsState, group_id: str,
          partitions: Sequence[tuple[str, int]] | None) -> dict[tuple[str, int], CommittedOffset]:
    """The committed offsets asked for (``None``: all of the group's)."""
    if partitions is None:
        return state.group(group_id)
    found = {}
    for topic, partition in partitions:
        committed = state.get(group_id, topic, partition)
        if committed is not None:
            found[(topic, partition)] = committed
    return found


def replay(shard: Any, offset: int, key: OffsetCommitKey, value: OffsetCommitValue | None
           ) -> None:
    """The replayer of ``OffsetCommit`` records: into ``shard.offsets``."""
    shard.offsets.replay(key, value)


COMMITTED_FIELDS = ("offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp")
"""The OffsetCommitValue fields a :class:`CommittedOffset` keeps, in its fields' order."""

COMMIT_KEY_PREFIXES, _decode_commit = fields_decoder(
    OffsetCommitKey, ("group", "topic", "partition"), COMMITTED_FIELDS)


def replay_raw(shard: Any, offset: int, key: bytes, value: bytes | None) -> None:
    """:func:`replay` from the record's bytes (key type in ``COMMIT_KEY_PREFIXES``): a load
    of millions of offset commits decodes only the fields kept, into no record objects."""
    (group, topic, partition), fields = _decode_commit(key, value)
    state: OffsetsState = shard.offsets
    if fields is None:
        state.replay_fields(group, topic, partition, None)
        return
    offsets = state._groups.get(group)  # replay_fields inlined: the load's hot path
    if offsets is None:
        offsets = state._groups[group] = {}
    offsets[(topic, partition)] = _committed(*fields)


def _committed_constructor() -> Callable[[int, int, str, int, int], CommittedOffset]:
    """``CommittedOffset(*fields)`` that fills its slots directly (a frozen dataclass's
    ``__init__`` sets each through ``object.__setattr__``, 4x slower): the load's hot path."""
    new = object.__new__
    setters = [CommittedOffset.__dict__[name].__set__ for name in COMMITTED_FIELDS]
    s0, s1, s2, s3, s4 = setters

    def make(offset: int, leader_epoch: int, metadata: str, commit_timestamp: int,
             expire_timestamp: int) -> CommittedOffset:
        committed: CommittedOffset = new(CommittedOffset)
        s0(committed, offset)
        s1(committed, leader_epoch)
        s2(committed, metadata)
        s3(committed, commit_timestamp)
        s4(committed, expire_timestamp)
        return committed

    return make


_committed = _committed_constructor()


def replay_pending(shard: Any, offset: int, key: TxnOffsetCommitKey,
                   value: TxnOffsetCommitValue | None) -> None:
    """The replayer of ``TxnOffsetCommit`` records (pending transactional offsets)."""
    shard.offsets.replay_pending(key, value)
