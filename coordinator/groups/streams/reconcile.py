"""Reconciliation of a streams group member (KIP-1071): one member's step from its current
assignment towards its target. Kafka 4.3's ``streams.CurrentAssignmentBuilder`` as one pure
function.

The rules:

* a member first gives up what its target no longer holds, keeping its epoch
  (``UNREVOKED_TASKS``); only once a heartbeat's owned task lists no longer hold any of those
  tasks does it move on, to its epoch + 1 and then towards the target;
* then it takes the target epoch and every target task that is released; the others are
  withheld (``UNRELEASED_TASKS``) and given on a later heartbeat;
* a task kept keeps the assignment epoch it was given at; a newly given active task gets the
  target epoch.

When is a task *unreleased* (Kafka's ``isUnreleasedTask`` predicates over the group's ownership
maps ``currentActiveTaskToProcessId`` / ``currentStandbyTaskToProcessIds`` /
``currentWarmupTaskToProcessIds``)? The maps are built from every member's stored record,
``assignedTasks`` and ``tasksPendingRevocation``, *this member's stored record included*, and
``StreamsGroup.active_owner_process`` / ``processes_holding`` (called with no ``exclude``) are
the same view:

* an active task, while any member holds it active (whatever its process, this member's own
  pending revocation included), or while this member's process holds it as standby or
  warm-up (this member included: a standby promoted to active on the same member must first
  be revoked, and its record must show it gone, before the active task is given);
* a standby or warm-up task, while this member's process holds it in any role (this member
  included: an active task demoted to standby must first be revoked, and its record must show
  it gone).

So a task this member has just acknowledged revoking is not given back in the same heartbeat:
the stored record still lists it until this step's record is replayed; it comes on the next
heartbeat. ``group`` must be the group as stored, before this heartbeat's records replay.

One difference from Kafka's maps, on purpose: they are updated incrementally, so when two
members of one process hold the same standby task and one lets it go, Kafka drops the process
from the task's set although the other still holds it; here the view is read from the members
themselves and the process still counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from coordinator.runtime import CoordinatorError
from protocol import ErrorCode

from .model import (
    EMPTY_TASKS,
    MemberState,
    StreamsGroup,
    StreamsGroupMember,
    TaskEpochs,
    Tasks,
    TasksTuple,
    overlaps,
    union,
)

UNKNOWN_STATE_MESSAGE = ("The streams group member is in a unknown state. "
                         "The member must abandon all its tasks and rejoin.")
"""Kafka's message (its grammar included) for a member whose stored state is unknown."""

Unreleased = Callable[[str, int], bool]


def is_owned_subset(owned: TasksTuple | None, assigned: TasksTuple) -> bool:
    """The epoch check of a request one epoch behind (GMM.throwIfStreamsGroupMemberEpochIsInvalid):
    the request's owned task lists are all present (``owned`` not None) and each role's list
    holds only tasks the member is assigned in that role. As in Kafka, a subtopology listed
    with no partitions counts as not held when the member has no tasks of it."""
    if owned is None:
        return False
    return all(_subset(o, a) for o, a in ((owned.active, assigned.active),
                                          (owned.standby, assigned.standby),
                                          (owned.warmup, assigned.warmup)))


def _subset(owned: Tasks, assigned: Tasks) -> bool:
    for subtopology, partitions in owned.items():
        held = assigned.get(subtopology)
        if held is None or not partitions <= held:
            return False
    return True


def owns_any(owned: TasksTuple | None, tasks: TasksTuple) -> bool:
    """Whether the member still owns any of ``tasks``, role by role (Kafka's ``containsAny``);
    unknown ownership counts as yes."""
    if owned is None:
        return True
    return (overlaps(owned.active, tasks.active) or overlaps(owned.standby, tasks.standby)
            or overlaps(owned.warmup, tasks.warmup))


def reconcile(member: StreamsGroupMember, target_epoch: int, target: TasksTuple,
              group: StreamsGroup, owned: TasksTuple | None) -> StreamsGroupMember:
    """The member after this heartbeat: ``member`` itself when nothing changes.

    ``target`` is the member's target assignment at ``target_epoch``; ``group`` the group as
    stored (whose members say who holds which task); ``owned`` the request's task lists, None
    when it did not send them. Raises FENCED_MEMBER_EPOCH for a member in the UNKNOWN state
    unless it reports that it owns nothing."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, group, owned)
    if state is MemberState.UNREVOKED_TASKS:
        if owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, group, owned)
    if state is MemberState.UNRELEASED_TASKS:
        return _next(member, member.member_epoch, target_epoch, target, group, owned)
    # UNKNOWN: a state written by a newer coordinator. Fence the member unless it owns nothing.
    if owned is None or not owned.is_empty():
        raise CoordinatorError(ErrorCode.fenced_member_epoch, UNKNOWN_STATE_MESSAGE)
    return _next(member, target_epoch, target_epoch, target, group, owned)


def _next(member: StreamsGroupMember, member_epoch: int, target_epoch: int, target: TasksTuple,
          group: StreamsGroup, owned: TasksTuple | None) -> StreamsGroupMember:
    """Kafka's ``computeNextAssignment`` + ``buildNewMember``."""
    current = member.assigned
    process = member.process_id

    def active_unreleased(subtopology: str, partition: int) -> bool:
        # Held active by anyone, or held by this process in any role (its active role is
        # already covered by the first test, so this adds standby and warm-up).
        return (group.active_owner_process(subtopology, partition) is not None
                or process in group.processes_holding(subtopology, partition))

    def other_unreleased(subtopology: str, partition: int) -> bool:
        return process in group.processes_holding(subtopology, partition)

    a_kept, a_revoke, a_add, a_unreleased = _diff(current.active, target.active,
                                                  active_unreleased)
    s_kept, s_revoke, s_add, s_unreleased = _diff(current.standby, target.standby,
                                                  other_unreleased)
    w_kept, w_revoke, w_add, w_unreleased = _diff(current.warmup, target.warmup,
                                                  other_unreleased)
    unreleased = a_unreleased or s_unreleased or w_unreleased

    # Active tasks kept or revoked keep the epoch they were given at (a record without epochs
    # reads as the member epoch, as Kafka loads it); new ones get the target epoch.
    old_epoch = member.member_epoch
    kept = TasksTuple(a_kept, s_kept, w_kept, _epochs(a_kept, current.epochs, old_epoch))
    revoke = TasksTuple(a_revoke, s_revoke, w_revoke,
                        _epochs(a_revoke, current.epochs, old_epoch))

    if not revoke.is_empty() and owns_any(owned, revoke):
        # Revoke first: the member stays at ``member_epoch`` until the client lets them go.
        return _with(member, MemberState.UNREVOKED_TASKS, member_epoch, kept, revoke)
    # Otherwise the member moves to the target epoch with what it keeps and what is free
    # to take; it waits in UNRELEASED_TASKS while some target task is not released yet.
    assigned = kept
    if a_add or s_add or w_add:
        epochs = {s: dict(p) for s, p in kept.epochs.items()}
        for subtopology, partitions in a_add.items():
            epochs.setdefault(subtopology, {}).update(dict.fromkeys(partitions, target_epoch))
        assigned = TasksTuple(union(a_kept, a_add), union(s_kept, s_add), union(w_kept, w_add),
                              epochs)
    state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
    return _with(member, state, target_epoch, assigned, EMPTY_TASKS)


def _diff(current: Tasks, target: Tasks,
          is_unreleased: Unreleased) -> tuple[Tasks, Tasks, Tasks, bool]:
    """(kept = current ∩ target, revoke = current - kept, add = target - kept - unreleased,
    whether some target task was unreleased), per subtopology."""
    kept: dict[str, frozenset[int]] = {}
    revoke: dict[str, frozenset[int]] = {}
    add: dict[str, frozenset[int]] = {}
    unreleased = False
    for subtopology in set(current) | set(target):
        have = current.get(subtopology, frozenset())
        want = target.get(subtopology, frozenset())
        keep = have & want
        take = set()
        for partition in want - keep:
            if is_unreleased(subtopology, partition):
                unreleased = True
            else:
                take.add(partition)
        if keep:
            kept[subtopology] = keep
        give_up = have - keep
        if give_up:
            revoke[subtopology] = give_up
        if take:
            add[subtopology] = frozenset(take)
    return kept, revoke, add, unreleased


def _epochs(active: Tasks, known: TaskEpochs, default: int) -> dict[str, dict[int, int]]:
    out: dict[str, dict[int, int]] = {}
    for subtopology, partitions in active.items():
        had: Mapping[int, int] = known.get(subtopology, {})
        out[subtopology] = {p: had.get(p, default) for p in partitions}
    return out


def _with(member: StreamsGroupMember, state: MemberState, epoch: int, assigned: TasksTuple,
          pending: TasksTuple) -> StreamsGroupMember:
    # Kafka's updateMemberEpoch: the previous epoch is the one the member had before this step.
    updated = replace(member, state=state, member_epoch=epoch,
                      previous_member_epoch=member.member_epoch, assigned=assigned,
                      pending_revocation=pending)
    return member if updated == member else updated
