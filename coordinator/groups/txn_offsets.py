"""The group coordinator's side of transactions: TxnOffsetCommit writes pending transactional
offsets (kept apart from the committed ones), and the transaction's marker on the group's
partition commits them (OffsetCommit records) or drops them, as Kafka's OffsetMetadataManager
(``commitTransactionalOffset``, ``replayEndTransactionMarker``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from coordinator.groups.classic.model import ClassicGroup, ClassicGroupState
from coordinator.groups.classic.session import validate_offset_commit
from coordinator.groups.common.offsets import OffsetCommit, PartitionCommit
from coordinator.runtime import Result
from protocol import ErrorCode
from storage.records import (
    OffsetCommitKey,
    OffsetCommitValue,
    TxnOffsetCommitKey,
    TxnOffsetCommitValue,
)

TRANSACTIONAL_API_VERSION = 9  # the consumer-group rule for OffsetCommit v9+ applies


@dataclass(frozen=True, slots=True)
class TxnOffsetCommit:
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int
    member_id: str
    group_instance_id: str | None
    partitions: Sequence[PartitionCommit]


def validate(shard: Any, request: TxnOffsetCommit) -> ErrorCode | None:
    """Kafka's validateTransactionalOffsetCommit: a group that does not exist takes commits
    without a generation; a classic group takes them from a member of its generation (or,
    without member information, from anyone), even while rebalancing; a consumer group from a
    member at its epoch (ILLEGAL_GENERATION otherwise)."""
    group = shard.groups.get(request.group_id)
    if group is None:
        return None if request.generation_id < 0 else ErrorCode.illegal_generation
    if isinstance(group, ClassicGroup):
        if request.generation_id < 0 and not request.member_id \
                and request.group_instance_id is None:
            return None if group.state is not ClassicGroupState.DEAD \
                else ErrorCode.coordinator_not_available
        error = validate_offset_commit(group, request.member_id, request.group_instance_id,
                                       request.generation_id)
        return None if error is ErrorCode.rebalance_in_progress else error
    validator = getattr(group, "validate_offset_commit", None)
    if validator is None:
        return None
    error = validator(OffsetCommit(request.group_id, request.generation_id, request.member_id,
                                   -1, request.partitions, TRANSACTIONAL_API_VERSION,
                                   request.group_instance_id))
    return ErrorCode.illegal_generation if error is ErrorCode.stale_member_epoch else error


def txn_offset_commit(request: TxnOffsetCommit, max_metadata_bytes: int) -> Any:
    """TxnOffsetCommit: pending offsets of the producer, and each partition's error."""

    def handler(shard: Any, now: int) -> Result:
        error = validate(shard, request)
        if error is not None:
            return Result((), {(p.topic, p.partition): error for p in request.partitions})
        records = []
        errors: dict[tuple[str, int], ErrorCode] = {}
        for p in request.partitions:
            metadata = p.metadata or ""
            if len(metadata.encode("utf-8")) > max_metadata_bytes:
                errors[(p.topic, p.partition)] = ErrorCode.offset_metadata_too_large
                continue
            records.append((
                TxnOffsetCommitKey(group=request.group_id, topic=p.topic, partition=p.partition,
                                   producer_id=request.producer_id),
                TxnOffsetCommitValue(producer_epoch=request.producer_epoch, offset=p.offset,
                                     leader_epoch=p.leader_epoch, metadata=metadata,
                                     commit_timestamp=now)))
            errors[(p.topic, p.partition)] = ErrorCode.none
        return Result(records, errors)

    return handler


def end_transaction_marker(producer_id: int, commit: bool) -> Any:
    """The marker of a transaction on this partition: every pending offset of the producer,
    in every group, becomes committed (commit) or is dropped (abort). Answers how many offsets
    were committed."""

    def handler(shard: Any, now: int) -> Result:
        records: list[Any] = []
        committed = 0
        for group_id in shard.offsets.groups_pending_from(producer_id):
            if commit:
                for (topic, partition), pending in shard.offsets.pending(
                        group_id, producer_id).items():
                    offset = pending.offset
                    records.append((
                        OffsetCommitKey(group=group_id, topic=topic, partition=partition),
                        OffsetCommitValue(offset=offset.offset, leader_epoch=offset.leader_epoch,
                                          metadata=offset.metadata,
                                          commit_timestamp=offset.commit_timestamp)))
                    committed += 1
            records.extend(shard.offsets.pending_tombstones(group_id, producer_id))
        return Result(records, committed)

    return handler
