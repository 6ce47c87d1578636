"""What one ShareFetch may acquire while other members of its group wait for their assignment.

Seed 000 (KIP-1263's batching and offload) delays a joining member's assignment by up to one
heartbeat interval, and says of share groups that this costs no revocation. But records, not
partitions, are what share members hold: in that interval a member that already fetches would
acquire every available record of every partition it was given when it was alone (a new
group's first member took 400 of 400 records, the second none). Running the assignor inline
for joins would defeat the seed's batching, so the bound is on acquisition instead, where
Kafka's ``SharePartition`` bounds what one fetch takes (max records, the in-flight limit):

- a member that has not taken its group's newest target yet, or while another member of the
  group has no assignment yet (its current assignment is empty and a target for it exists or
  is still to be computed), acquires only from the partitions of its own newest target, when
  it has one (it takes that target at its next heartbeat anyway: share groups have no
  revocation, so this is the new assignment applied a heartbeat early);
- from a partition such a waiting member will share (every partition while a waiting member's
  target is not computed yet), the member acquires, over the fetches of the wait, at most its
  even share of what the partition had to give when the wait began plus what was produced
  since: ``ceil((backlog + appended) / members)``, counted in its share session (a fresh
  count for each group epoch).

Once every member has its newest target, nothing is bounded here. Members not in the group (a
fenced one's last fetches, raw clients) are not bounded either: Kafka's share fetch does not
check membership.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .model import Assignment, ShareGroup

TopicPartition = tuple[uuid.UUID, int]


def _partitions(assignment: Assignment) -> Iterable[TopicPartition]:
    return ((topic_id, p) for topic_id, parts in assignment.items() for p in parts)


Ledger = dict[TopicPartition, list[int]]
"""A share session's counts while bounded: partition -> [group epoch, backlog when the wait
began, log end then, records acquired since]."""


@dataclass(frozen=True, slots=True)
class AcquireBound:
    only: frozenset[TopicPartition] | None
    """The member's own newest target, when it has one; None: any partition."""
    shared: frozenset[TopicPartition] | None
    """Partitions a waiting member will share; None: every partition (a waiting member's
    target is not computed yet)."""
    members: int
    group_epoch: int
    ledger: Ledger

    def records(self, tp: TopicPartition, backlog: int, log_end: int, budget: int) -> int:
        """How many of ``budget`` records the fetch may acquire from ``tp``, whose ``backlog``
        records (from the next fetch offset to the log end ``log_end``) are acquirable."""
        if self.only is not None and tp not in self.only:
            return 0
        if self.shared is not None and tp not in self.shared:
            return budget
        count = self.ledger.get(tp)
        if count is None or count[0] != self.group_epoch:
            count = self.ledger[tp] = [self.group_epoch, max(0, backlog), log_end, 0]
        _, start_backlog, start_end, taken = count
        share = -(-(start_backlog + max(0, log_end - start_end)) // self.members)
        return max(0, min(budget, share - taken))

    def took(self, tp: TopicPartition, records: int) -> None:
        count = self.ledger.get(tp)
        if count is not None and count[0] == self.group_epoch:
            count[3] += records


def acquire_bound(shard: Any, group_id: str, member_id: str, ledger: Ledger
                  ) -> AcquireBound | None:
    """The bound on ``member_id``'s fetch (counting in its session's ``ledger``), or None when
    every member has its newest target (the ledger is then cleared)."""
    group = shard.groups.get(group_id)
    if not isinstance(group, ShareGroup) or member_id not in group.members:
        ledger.clear()
        return None
    pending = group.group_epoch > group.assignment_epoch
    shared: set[TopicPartition] | None = set()
    waiting = False
    for other_id, other in group.members.items():
        if other_id == member_id or other.assigned_partitions:
            continue
        target = group.target.get(other_id)
        if target:
            waiting = True
            if shared is not None:
                shared.update(_partitions(target))
        elif pending:
            waiting, shared = True, None
    own = group.target.get(member_id)
    behind = own is not None and group.members[member_id].member_epoch < group.assignment_epoch
    if not waiting and not behind:
        ledger.clear()
        return None
    return AcquireBound(None if own is None else frozenset(_partitions(own)),
                        None if shared is None else frozenset(shared) if waiting
                        else frozenset(), len(group.members), group.group_epoch, ledger)
