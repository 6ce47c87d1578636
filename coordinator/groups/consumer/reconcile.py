"""Reconciliation: one member's step from its current assignment towards its target (KIP-848).

Kafka's ``CurrentAssignmentBuilder``, as one pure function. The rules:

* a member first revokes what it must give up, keeping its epoch (``UNREVOKED_PARTITIONS``);
  only once the heartbeat's owned partitions no longer hold them does it move on;
* then it takes the target epoch and every target partition no other member still holds;
  partitions another member has yet to revoke are withheld (``UNRELEASED_PARTITIONS``) and
  given on a later heartbeat, once released;
* partitions of topics the member no longer subscribes to are revoked even if the target
  (which may lag the subscription) still holds them (seed 000, KAFKA-19431).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import replace

from .model import EMPTY, Assignment, ConsumerGroupMember, MemberState

PartitionEpoch = Callable[[uuid.UUID, int], int]
"""(topic id, partition) -> epoch of the member holding it, or -1 when it is free."""
Owned = Iterable[tuple[uuid.UUID, Iterable[int]]] | None


def owns_any(owned: Owned, partitions: Assignment) -> bool:
    """Whether the member still owns any of ``partitions``; unknown ownership counts as yes."""
    if owned is None:
        return True
    for topic_id, held in owned:
        pending = partitions.get(topic_id)
        if pending and not pending.isdisjoint(held):
            return True
    return False


def _unsubscribed(member: ConsumerGroupMember, subscribed_ids: Collection[uuid.UUID]) -> bool:
    return any(t not in subscribed_ids for t in member.assigned_partitions)


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              partition_epoch: PartitionEpoch, owned: Owned,
              subscribed_ids: Collection[uuid.UUID]) -> ConsumerGroupMember:
    """The member after this heartbeat. ``owned`` is the heartbeat's TopicPartitions (None when
    the client did not send them); ``subscribed_ids`` the ids of the topics it subscribes to."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch and not _unsubscribed(member, subscribed_ids):
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch,
                     owned, subscribed_ids)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.partitions_pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch,
                     owned, subscribed_ids)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned,
                     subscribed_ids)
    raise ValueError(f"member {member.member_id} is in state {state!r}")


def _next(member: ConsumerGroupMember, member_epoch: int, target_epoch: int, target: Assignment,
          partition_epoch: PartitionEpoch, owned: Owned,
          subscribed_ids: Collection[uuid.UUID]) -> ConsumerGroupMember:
    current_assigned = member.assigned_partitions
    if (current_assigned is target and not member.partitions_pending_revocation
            and all(topic_id in subscribed_ids for topic_id in target)):
        # Already holds exactly its target (an epoch bump): nothing to revoke or to take.
        return _with(member, MemberState.STABLE, target_epoch, target, EMPTY)
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    adding: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(current_assigned):
        wanted = target.get(topic_id, frozenset()) if topic_id in subscribed_ids else frozenset()
        current = current_assigned.get(topic_id, frozenset())
        keep = current & wanted
        give_up = current - keep
        take = set()
        for p in wanted - keep:
            if partition_epoch(topic_id, p) == -1:
                take.add(p)
            else:
                unreleased = True
        if keep:
            assigned[topic_id] = keep
        if give_up:
            revoking[topic_id] = give_up
        if take:
            adding[topic_id] = frozenset(take)

    if revoking and owns_any(owned, revoking):
        # Revoke first: the member keeps its epoch until the client has let them go.
        return _with(member, MemberState.UNREVOKED_PARTITIONS, member_epoch, assigned, revoking)
    for topic_id, partitions in adding.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
    if unreleased:
        return _with(member, MemberState.UNRELEASED_PARTITIONS, target_epoch, assigned, EMPTY)
    # Holding its whole target: keep the target's object, so the next epoch bump is the
    # shortcut above (and its record and replay reuse what they made: see assignment_forms).
    return _with(member, MemberState.STABLE, target_epoch,
                 target if assigned == target else assigned, EMPTY)


def _with(member: ConsumerGroupMember, state: MemberState, epoch: int,
          assigned: Assignment, revoking: Assignment) -> ConsumerGroupMember:
    # Kafka's updateMemberEpoch: the previous epoch is the one the member had before this step.
    return replace(member, state=state, member_epoch=epoch,
                   previous_member_epoch=member.member_epoch,
                   assigned_partitions=assigned, partitions_pending_revocation=revoking)
