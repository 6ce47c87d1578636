"""Deferred and incremental resolution of imbalance (seed 004, Designs II and III) in a consumer
group's target: the group's policy (``consumer.scheduled.rebalance.max.delay.ms``,
``consumer.assignment.max.moves``), its held partitions and their records (type 1020,
``ConsumerGroupHeldPartitions``), and ``apply``, which turns the assignor's proposal into the
target (``modern.deferred.resolve``, then ``modern.incremental.limit_moves``) with the records
that go with it: the holds that changed, and a group epoch bump when moves were left for a
later round. ``holds`` creates holds as members go and releases them when their delay ends.

A group with a policy on computes its targets inline (``offload.start_run``): the policies
need the whole target and the group's holds at the moment it is installed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator.groups.modern import replay as modern_replay
from coordinator.groups.modern.deferred import Hold, changed_holds, kept_items, resolve
from coordinator.groups.modern.incremental import limit_moves
from coordinator.groups.modern.settings import ImbalancePolicy
from coordinator.observability import timeline
from coordinator.observability.logs import get_logger
from coordinator.runtime.result import Record
from storage.records import ConsumerGroupHeldPartitionsKey, ConsumerGroupHeldPartitionsValue

from . import records
from .assignment_forms import Assignment
from .model import ConsumerGroup

log = get_logger("coordinator.groups.consumer")

Item = tuple[uuid.UUID, int]


def items_of(assignment: Assignment) -> frozenset[Item]:
    return frozenset((topic_id, p) for topic_id, partitions in assignment.items()
                     for p in partitions)


def assignment_from(items: Iterable[Item]) -> dict[uuid.UUID, frozenset[int]]:
    by_topic: dict[uuid.UUID, set[int]] = {}
    for topic_id, partition in items:
        by_topic.setdefault(topic_id, set()).add(partition)
    return {topic_id: frozenset(ps) for topic_id, ps in by_topic.items()}


# ------------------------------------------------------------------------------ records
def held_record(group_id: str, hold: Hold) -> Record:
    return records.held_partitions(group_id, hold.member_id, assignment_from(hold.items),
                                   hold.deadline_ms, hold.reason)


held_tombstone = records.held_partitions_tombstone


def held_of(group: ConsumerGroup) -> dict[str, Hold]:
    """The group's holds by the id of the member whose partitions they are."""
    return group.held


def _replay(group: ConsumerGroup, key: ConsumerGroupHeldPartitionsKey,
            value: ConsumerGroupHeldPartitionsValue | None) -> None:
    held = held_of(group)
    if value is None:
        held.pop(key.member_id, None)
        return
    items = frozenset((tp.topic_id, p) for tp in value.topic_partitions for p in tp.partitions)
    held[key.member_id] = Hold(key.member_id, items, value.deadline_ms, value.reason)


replay = modern_replay.group_record(ConsumerGroup, _replay)


# ------------------------------------------------------------------------------ the target
@dataclass(frozen=True, slots=True)
class Applied:
    assignments: dict[str, Assignment]
    records: list[Record] = field(default_factory=list)
    """Hold changes and, when moves wait for a later round, the group epoch bump."""
    next_round: bool = False
    moved: int = 0
    deferred: int = 0


def apply(group: ConsumerGroup, group_epoch: int, previous: Mapping[str, Assignment],
          proposal: Mapping[str, Assignment], subscribed: Callable[[str], frozenset[uuid.UUID]],
          policy: ImbalancePolicy, now_ms: int) -> Applied:
    """The target of the members in ``proposal`` (the assignor's answer for every member) under
    ``policy``, from their ``previous`` targets; ``subscribed(member_id)``: the ids of the
    topics the member may have. ``group_epoch``: the new target's epoch."""
    gid = group.group_id
    holds = held_of(group)
    prev = {m: items_of(previous.get(m, {})) for m in proposal}
    wanted = {m: items_of(a) for m, a in proposal.items()}
    topics = {m: subscribed(m) for m in proposal}

    def can_take(member_id: str, item: Item) -> bool:
        return item[0] in topics[member_id]

    active = list(holds.values()) if policy.delay_ms > 0 else []
    deferred = resolve(prev, wanted, active, now_ms, can_take)
    limited = limit_moves(kept_items(prev, proposal, can_take), deferred.assignment,
                          policy.max_moves)
    gone, changed = changed_holds(holds, deferred.holds)
    out: list[Record] = [held_tombstone(gid, m) for m in gone]
    out += [held_record(gid, h) for h in changed]
    for member_id, items in deferred.claimed.items():
        log.info("held partitions given to a joining member", group_id=gid,
                 member_id=member_id, partitions=len(items))
    if deferred.holding:
        log.info("partitions held for members that left", group_id=gid,
                 partitions=sum(len(h.items) for h in deferred.holds),
                 until_ms=min(h.deadline_ms for h in deferred.holds))
    # Holds just taken up (or that ended) leave the target the assignor's to make: the joining
    # members got what was held first, the others rebalance in the next round.
    settling = bool(holds) and not deferred.holding and deferred.assignment != wanted
    next_round = limited.deferred > 0 or settling
    if next_round:
        out.append(records.group_epoch(gid, group_epoch + 1))
        log.info("bumped group epoch", group_id=gid, group_epoch=group_epoch + 1,
                 reason="incremental resolution: more moves in the next round"
                 if limited.deferred else "held partitions taken: the others rebalance",
                 moved=limited.moved, deferred=limited.deferred)
    if policy.max_moves > 0 and (limited.moved or limited.deferred):
        timeline.note_round(gid, group_epoch, limited.moved, limited.deferred, now_ms)
    assignments: dict[str, Assignment] = {}
    for member_id, items in limited.assignment.items():
        before = previous.get(member_id)
        assignments[member_id] = before if before is not None and items == prev[member_id] \
            else assignment_from(items)
    return Applied(assignments, out, next_round, limited.moved, limited.deferred)


def holds_view(group: ConsumerGroup, topic_name: Callable[[uuid.UUID], str | None]
               ) -> list[dict[str, Any]]:
    """The group's holds as the control endpoint shows them."""
    out = []
    for hold in sorted(held_of(group).values(), key=lambda h: (h.deadline_ms, h.member_id)):
        partitions: dict[str, list[int]] = {}
        for topic_id, p in sorted(hold.items):
            partitions.setdefault(topic_name(topic_id) or str(topic_id), []).append(p)
        out.append({"member": hold.member_id, "reason": hold.reason,
                    "deadline_ms": hold.deadline_ms,
                    "partitions": {t: sorted(ps) for t, ps in sorted(partitions.items())}})
    return out
