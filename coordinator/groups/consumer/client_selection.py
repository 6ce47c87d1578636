"""Client-side assignors (the KIP-848 draft, seed 003): which one a group uses, which member
computes its target, and the computation in flight (``group.consumer.client.assignors.enable``).

A member lists the client-side assignors it supports in its heartbeat (``ClientAssignors``,
a tagged field: ``protocol.client_assignors``), in its order of preference; the list is kept
in a ConsumerGroupMemberClientAssignors record. When a new target is due:

* **the assignor**: among the members that list client-side assignors, a name every one of
  them lists with overlapping version ranges, the one they prefer most (the least sum of its
  positions in their lists, then by name); its version is the highest all of them support.
  The draft asks every member of the group to support it; a real client cannot list one (no
  Kafka client sends the field), so members that list none do not veto it: that is what lets a
  Python assignor drive a group of unchanged consumers. Without one, the group's server-side
  assignor computes the target as before.
* **the member**: of those listing it, the one supporting its highest version (then the least
  member id), except members passed over in this computation.
* **the computation** (``ClientComputation``, in memory like an offloaded run, and marked as the
  group's run in flight, so no other run starts meanwhile): the chosen member's heartbeats get
  ``ShouldComputeAssignment``; from the first of them it has its rebalance timeout to install
  a target (the draft: "the time on the coordinator side starts ticking when the member is
  notified"). The group's assign timer checks it (``check``): when the chosen member left or
  its time ran out, another member is chosen (the late one is not fenced: fencing is the
  session's); when none is left, the server-side assignor computes this epoch's target
  (``client_fallback_epoch``) and the next epoch asks the members again.

ConsumerGroupPrepareAssignment and ConsumerGroupInstallAssignment are ``client_assignor``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from coordinator.groups.modern.members import replayed_group
from coordinator.observability.logs import get_logger
from coordinator.runtime.result import Record
from storage.records.client_assignors import (
    ClientAssignor as ClientAssignorRecord,
)
from storage.records.client_assignors import (
    ConsumerGroupClientAssignmentKey,
    ConsumerGroupClientAssignmentValue,
    ConsumerGroupMemberClientAssignorsKey,
    ConsumerGroupMemberClientAssignorsValue,
)

from .model import ConsumerGroup, ConsumerGroupMember

log = get_logger("coordinator.groups.consumer")

_run_ids = itertools.count(-1, -1)
"""Ids a client-side computation takes as the group's run in flight (negative: an offloaded
run's are positive)."""


@dataclass(frozen=True, slots=True)
class ClientAssignor:
    """A client-side assignor a member lists (the draft's ``Assignor``)."""

    name: str
    minimum_version: int = 0
    maximum_version: int = 0
    reason: int = 0
    version: int = 0
    metadata: bytes = b""


@dataclass(slots=True)
class ClientComputation:
    """A client-side computation of a group's target, in flight (in memory)."""

    run_id: int
    assignor: str
    version: int
    member_id: str
    """The member chosen to compute it."""
    passed_over: frozenset[str] = frozenset()
    """Members chosen before in this computation that did not install in time."""
    deadline_ms: int | None = None
    """Set when the chosen member is first told (its heartbeat's ShouldComputeAssignment)."""
    prepared_epoch: int | None = None
    """The group epoch of the state ConsumerGroupPrepareAssignment last handed out."""
    prepared_members: frozenset[str] = field(default_factory=frozenset)
    """The members in that state."""


# ------------------------------------------------------------------------------ records
def assignors_record(group_id: str, member_id: str,
                     assignors: Sequence[ClientAssignor]) -> Record:
    return (ConsumerGroupMemberClientAssignorsKey(group_id=group_id, member_id=member_id),
            ConsumerGroupMemberClientAssignorsValue(assignors=tuple(
                ClientAssignorRecord(name=a.name, minimum_version=a.minimum_version,
                                     maximum_version=a.maximum_version, reason=a.reason,
                                     version=a.version, metadata=a.metadata)
                for a in assignors)))


def tombstones(group: ConsumerGroup, member_id: str) -> list[Record]:
    """The tombstone of the member's client-side assignors, if it listed any: written with the
    records that remove the member."""
    if member_id not in group.client_assignors:
        return []
    return [(ConsumerGroupMemberClientAssignorsKey(group_id=group.group_id,
                                                   member_id=member_id), None)]


def group_tombstones(group: ConsumerGroup) -> list[Record]:
    """With the group's: every member's, and the group's client assignment record."""
    out = [t for member_id in sorted(group.client_assignors)
           for t in tombstones(group, member_id)]
    if group.client_assignment is not None:
        out.append((ConsumerGroupClientAssignmentKey(group_id=group.group_id), None))
    return out


def assignment_record(group_id: str, epoch: int, assignor: str, member_id: str,
                      error: int) -> Record:
    return (ConsumerGroupClientAssignmentKey(group_id=group_id),
            ConsumerGroupClientAssignmentValue(assignment_epoch=epoch, assignor=assignor,
                                               member_id=member_id, error=error))


def replay_assignors(shard: Any, offset: int, key: ConsumerGroupMemberClientAssignorsKey,
                     value: ConsumerGroupMemberClientAssignorsValue | None) -> None:
    group = _replayed(shard, key.group_id, value is not None)
    if group is None:
        return
    if value is None:
        group.client_assignors.pop(key.member_id, None)
    else:
        group.client_assignors[key.member_id] = tuple(
            ClientAssignor(a.name, a.minimum_version, a.maximum_version, a.reason, a.version,
                           bytes(a.metadata)) for a in value.assignors)


def replay_assignment(shard: Any, offset: int, key: ConsumerGroupClientAssignmentKey,
                      value: ConsumerGroupClientAssignmentValue | None) -> None:
    group = _replayed(shard, key.group_id, value is not None)
    if group is not None:
        group.client_assignment = value


def _replayed(shard: Any, group_id: str, create: bool) -> ConsumerGroup | None:
    return replayed_group(shard, group_id, ConsumerGroup, create=create)


# ------------------------------------------------------------------------------ selection
def listed_change(group: ConsumerGroup, member_id: str,
                  listed: Sequence[ClientAssignor] | None) -> list[Record]:
    """The record of a member's new list (None: unchanged; an empty list: none), if it
    changed."""
    if listed is None:
        return []
    before = group.client_assignors.get(member_id, ())
    if tuple(listed) == before:
        return []
    return [assignors_record(group.group_id, member_id, listed)]


def selected_assignor(lists: Mapping[str, Sequence[ClientAssignor]]) -> tuple[str, int] | None:
    """(name, version) of the client-side assignor the members' lists agree on, or None."""
    listing = [assignors for assignors in lists.values() if assignors]
    if not listing:
        return None
    best: tuple[int, str, int] | None = None
    for name in sorted({a.name for a in listing[0]}):
        positions, low, high = 0, -(2**15), 2**15 - 1
        for assignors in listing:
            found = next(((i, a) for i, a in enumerate(assignors) if a.name == name), None)
            if found is None:
                break
            positions += found[0]
            low = max(low, found[1].minimum_version)
            high = min(high, found[1].maximum_version)
        else:
            if low <= high and (best is None or (positions, name) < best[:2]):
                best = (positions, name, high)
    return None if best is None else (best[1], best[2])


def candidates(lists: Mapping[str, Sequence[ClientAssignor]], name: str,
               members: Mapping[str, Any], passed_over: frozenset[str]) -> list[str]:
    """The members that may compute with ``name``, the one to choose first."""
    ranked = []
    for member_id, assignors in lists.items():
        if member_id not in members or member_id in passed_over:
            continue
        found = next((a for a in assignors if a.name == name), None)
        if found is not None:
            ranked.append((-found.maximum_version, member_id))
    return [member_id for _, member_id in sorted(ranked)]


def _lists(group: ConsumerGroup, members: Mapping[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {mid: assignors for mid, assignors in group.client_assignors.items()
            if mid in members}


def start(shard: Any, group: ConsumerGroup, group_epoch: int,
          members: Mapping[str, ConsumerGroupMember]) -> Callable[[], None] | None:
    """The effect that starts a client-side computation of the target at ``group_epoch`` for
    ``members`` (as they will be after this event), or None when the server-side assignor
    computes it (no assignor the members agree on, or this epoch fell back)."""
    if group.client_fallback_epoch == group_epoch and group_epoch > 0:
        return None
    lists = _lists(group, members)
    selected = selected_assignor(lists)
    if selected is None:
        return None
    chosen = candidates(lists, selected[0], members, frozenset())
    if not chosen:
        return None
    gid = group.group_id
    log.info("client-side target assignment", group_id=gid, group_epoch=group_epoch,
             assignor=selected[0], member_id=chosen[0])

    def effect() -> None:
        found = shard.groups.get(gid)
        if not isinstance(found, ConsumerGroup) or found.assignor_run is not None:
            return
        computation = ClientComputation(next(_run_ids), selected[0], selected[1], chosen[0])
        found.client_computation = computation
        found.assignor_run = computation.run_id

    return effect


def notify(group: ConsumerGroup, member: ConsumerGroupMember, now_ms: int,
           default_timeout_ms: int) -> int | None:
    """``member`` heartbeats: the deadline of the computation it is chosen for (from its first
    notice on: its rebalance timeout), or None when it is not the chosen one."""
    computation = group.client_computation
    if computation is None or computation.member_id != member.member_id:
        return None
    if computation.deadline_ms is None:
        timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 \
            else default_timeout_ms
        computation.deadline_ms = now_ms + timeout
    return computation.deadline_ms


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the assign timer does about a computation in flight."""

    wait_until: int | None = None
    """Nothing yet: check again then (None: never, until the chosen member is told)."""
    fall_back: bool = False
    """The server-side assignor computes the target now."""


def check(group: ConsumerGroup, now_ms: int) -> Verdict:
    """The assign timer meets the group's computation: the chosen member left (another is
    chosen) or ran out of time (passed over, another is chosen), or nobody is left to choose
    (the computation ends: fall back). Changes the computation in memory."""
    computation: ClientComputation = group.client_computation
    expired = computation.deadline_ms is not None and now_ms >= computation.deadline_ms
    if computation.member_id in group.members and not expired:
        return Verdict(wait_until=computation.deadline_ms)
    passed = computation.passed_over | {computation.member_id} if expired \
        else computation.passed_over
    lists = _lists(group, group.members)
    selected = selected_assignor(lists)
    chosen = [] if selected is None else candidates(lists, selected[0], group.members, passed)
    reason = "timed out" if expired else "left the group"
    if chosen:
        assert selected is not None
        log.info("client-side assignment: another member chosen", group_id=group.group_id,
                 member_id=chosen[0], previous=computation.member_id, reason=reason)
        group.client_computation = replace(
            computation, assignor=selected[0], version=selected[1], member_id=chosen[0],
            passed_over=passed, deadline_ms=None, prepared_epoch=None,
            prepared_members=frozenset())
        return Verdict()
    log.warning("client-side assignment: no member left to compute it, the server-side "
                "assignor does", group_id=group.group_id, previous=computation.member_id,
                reason=reason)
    end(group)
    if selected is not None:
        group.client_fallback_epoch = group.group_epoch
    return Verdict(fall_back=True)


def end(group: ConsumerGroup) -> None:
    """The computation is over (installed, or fallen back)."""
    computation = group.client_computation
    if computation is not None and group.assignor_run == computation.run_id:
        group.assignor_run = None
    group.client_computation = None
