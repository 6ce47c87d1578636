"""Share sessions (KIP-932): what a member fetches from, and the epoch of its next request.

A session is keyed by (group id, member id) and lives in memory on the group's coordinator
partition (a restart loses them: members get SHARE_SESSION_NOT_FOUND and open a new one).
Kafka's rules (``SharePartitionManager.newContext``, ``ShareSessionCache``):

- ShareSessionEpoch 0 opens a full session (replacing the member's old one, whose records stay
  acquired by the member) with the request's partitions; it may not carry acknowledgements;
- a positive epoch must be the session's (INVALID_SHARE_SESSION_EPOCH, or
  SHARE_SESSION_NOT_FOUND without a session); the request's partitions are added, its
  forgotten ones removed, and the epoch moves on (wrapping to 1);
- -1 closes the session after the request's acknowledgements; the member's acquired records
  are released.

A full session answers for every partition; an incremental one only for partitions with
records, errors, acknowledgements, or just added.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from coordinator.runtime import CoordinatorError
from protocol import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1

TopicPartition = tuple[uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    """Kafka's ``ShareRequestMetadata.nextEpoch``."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


@dataclass(slots=True, weakref_slot=True, eq=False)
class ShareSession:
    epoch: int
    """The epoch the member's next request must carry."""
    partitions: dict[TopicPartition, bool] = field(default_factory=dict)
    """The session's partitions, in the order added; True until a response has named it."""
    max_bytes: dict[TopicPartition, int] = field(default_factory=dict)
    """ShareFetch v0's PartitionMaxBytes, as last sent for a partition (Kafka 4.0's
    ``CachedSharePartition``): 0 fetches nothing from it. v1 has no per-partition limit."""
    waiting: dict[TopicPartition, list[int]] = field(default_factory=dict)
    """What the member acquired while others waited for their assignment (``waiting``)."""

    def add(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            if tp not in self.partitions:
                self.partitions[tp] = True

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.partitions.pop(tp, None)
            self.max_bytes.pop(tp, None)

    def byte_limits(self, max_bytes: int) -> dict[TopicPartition, int]:
        """What each partition may return of a fetch's ``max_bytes``: an even share (Kafka's
        uniform ``PartitionMaxBytesStrategy``), within the partition's own v0 limit. A limit
        of 0 or less fetches nothing from the partition (so ``fetch.max.bytes=0`` gets no
        records, as from Kafka); otherwise a partition's first batch comes whatever its size
        (KIP-74)."""
        share = max(0, max_bytes) // max(1, len(self.partitions))
        return {tp: min(share, self.max_bytes.get(tp, share)) for tp in self.partitions}


SessionKey = tuple[str, str]


def _epoch_error(message: str) -> CoordinatorError:
    return CoordinatorError(ErrorCode.invalid_share_session_epoch, message)


def _not_found(key: SessionKey) -> CoordinatorError:
    return CoordinatorError(ErrorCode.share_session_not_found,
                            f"Share session for the member {key[1]} of group {key[0]} "
                            "not found.")


def check(sessions: dict[SessionKey, ShareSession], key: SessionKey, epoch: int
          ) -> ShareSession:
    """The session a positive or final epoch addresses, or Kafka's error for it."""
    session = sessions.get(key)
    if session is None:
        raise _not_found(key)
    if epoch != FINAL_EPOCH and epoch != session.epoch:
        raise _epoch_error(f"The share session epoch {epoch} does not match the expected "
                           f"epoch {session.epoch}.")
    return session
