"""Deferred resolution of imbalance (seed 004, Design II), as a pure function over targets.

When a member leaves or is fenced and the group's ``<type>.scheduled.rebalance.max.delay.ms``
is above 0, what its target held is not spread over the others at once: it is *held*,
unassigned in the target, until the delay ends, in case the member comes back (a pod
restarting without static membership). A member that joins meanwhile (one with nothing in its
previous target: seed 004's heuristic for "probably the returning member") gets the held items
first, up to a fair share of the group's items, and while anything is held nobody else's items
move. Once the delay ends (or everything held was taken) the group's assignor spreads what is
left as usual.

Items are anything hashable and sortable: ``(topic id, partition)`` for consumer groups,
``(subtopology, partition)`` for a streams group's active tasks. Each group type keeps its
holds in records and calls ``resolve`` on the assignor's proposal.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

Items = frozenset[Any]
Targets = Mapping[str, Items]
CanTake = Callable[[str, Any], bool]
"""Whether a member may have an item (it subscribes to the item's topic)."""


@dataclass(frozen=True, slots=True)
class Hold:
    """The items of a member that left or was fenced, held unassigned until ``deadline_ms``."""

    member_id: str
    items: Items
    deadline_ms: int
    reason: str

    def active(self, now_ms: int) -> bool:
        return bool(self.items) and now_ms < self.deadline_ms


def new_hold(member_id: str, items: Iterable[Hashable], now_ms: int, delay_ms: int,
             reason: str, earlier: Hold | None = None) -> Hold | None:
    """The hold of a removed member's ``items`` (None when the delay is 0 or there are none),
    with what its ``earlier`` hold still has (removed again: it rejoined with its member id)."""
    held = frozenset(items) | (earlier.items if earlier is not None else frozenset())
    if delay_ms <= 0 or not held:
        return None
    return Hold(member_id, held, now_ms + delay_ms, reason)


@dataclass(frozen=True, slots=True)
class Deferred:
    assignment: dict[str, Items]
    """The new target of every member in the proposal."""
    holds: tuple[Hold, ...]
    """The holds still active after this target (items given away taken out); an expired or
    emptied hold is not here."""
    claimed: dict[str, Items] = field(default_factory=dict)
    """Held items given to members that joined meanwhile, by member."""

    @property
    def holding(self) -> bool:
        return bool(self.holds)


def kept_items(previous: Targets, members: Iterable[str], can_take: CanTake) -> dict[str, Items]:
    """What each member's previous target has that it may still have."""
    return {m: frozenset(i for i in previous.get(m, ()) if can_take(m, i)) for m in members}


def resolve(previous: Targets, proposal: Targets, holds: Sequence[Hold], now_ms: int,
            can_take: CanTake) -> Deferred:
    """The target under deferred resolution. ``previous``: the members' targets before this
    computation; ``proposal``: what the group's assignor gave (every member of the new
    target); ``holds``: the group's holds. With no active hold the proposal is the target.
    Otherwise every member keeps what it had (and may still have), items nobody had (a new
    topic, a partition added) go as the proposal says, held items stay unassigned except that
    members with nothing before take them, earliest deadline first, each up to
    ``ceil(items / members)``."""
    active = [h for h in holds if h.active(now_ms)]
    if not active:
        return Deferred({m: frozenset(items) for m, items in proposal.items()}, ())
    kept = kept_items(previous, proposal, can_take)
    owned: set[Any] = set().union(*kept.values()) if kept else set()
    held: set[Any] = set()
    for hold in active:
        held |= hold.items
    held -= owned
    result = {m: set(kept[m]) for m in proposal}
    total = len(owned) + len(held)
    for m, items in proposal.items():
        for item in items:
            if item not in owned and item not in held:
                result[m].add(item)
                total += 1
    quota = -(-total // max(1, len(proposal)))
    newcomers = sorted(m for m in proposal if not previous.get(m))
    claimed: dict[str, set[Any]] = {}
    remaining: list[Hold] = []
    for hold in sorted(active, key=lambda h: (h.deadline_ms, h.member_id)):
        left = set()
        for item in sorted(hold.items & held):
            takers = [n for n in newcomers if len(result[n]) < quota and can_take(n, item)]
            if not takers:
                left.add(item)
                continue
            taker = min(takers, key=lambda n: (len(result[n]), n))
            result[taker].add(item)
            claimed.setdefault(taker, set()).add(item)
        held -= hold.items
        if left:
            remaining.append(replace(hold, items=frozenset(left)))
    return Deferred({m: frozenset(items) for m, items in result.items()}, tuple(remaining),
                    {m: frozenset(items) for m, items in claimed.items()})


def changed_holds(before: Mapping[str, Hold], after: Iterable[Hold]
                  ) -> tuple[list[str], list[Hold]]:
    """(the members whose hold is gone, the holds that changed) from ``before`` (the group's,
    by member) to ``after`` (``Deferred.holds``): what a group type writes records of."""
    now = {h.member_id: h for h in after}
    gone = [m for m in before if m not in now]
    changed = [h for m, h in now.items() if m in before and h.items != before[m].items]
    return gone, changed


def next_deadline(holds: Iterable[Hold]) -> int | None:
    """When the earliest of ``holds`` ends (None without any)."""
    deadlines = [h.deadline_ms for h in holds if h.items]
    return min(deadlines) if deadlines else None
