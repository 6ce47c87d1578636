"""Incremental resolution of imbalance (seed 004, Design III), as a pure function over targets.

When the group's assignor wants to move more items than ``<type>.assignment.max.moves`` away
from the members whose previous target has them (a scale-up, a member back after the delay), a
new target makes only that many of the moves; the group epoch is bumped with it, so the next
target (another round, seed 000's assignment interval later) makes more, until the target is
the assignor's. Each round takes, one at a time, the move from the most loaded member to the
least loaded one (the greatest drop in imbalance), among the moves the assignor wants: so the
assignor's constraints (racks, co-partitioning, subscriptions) hold for every move made, and a
deferred item stays with the member that had it. Items nobody had (held ones, new topics) are
not moves: they go as the assignor says.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Items = frozenset[Any]


@dataclass(frozen=True, slots=True)
class Limited:
    assignment: dict[str, Items]
    moved: int
    """Items this target moves away from a member that had them."""
    deferred: int
    """Moves the assignor wanted that wait for a later round."""


def moves(previous: Mapping[str, Items], proposal: Mapping[str, Items]
          ) -> list[tuple[Any, str, str]]:
    """(item, from, to) for each item ``proposal`` gives to another member than the one whose
    ``previous`` target (of the members still in ``proposal``) has it."""
    before = {item: m for m, items in previous.items() if m in proposal for item in items}
    out = []
    for member, items in proposal.items():
        for item in items:
            owner = before.get(item)
            if owner is not None and owner != member:
                out.append((item, owner, member))
    return out


def limit_moves(previous: Mapping[str, Items], proposal: Mapping[str, Items],
                max_moves: int) -> Limited:
    """The target that makes at most ``max_moves`` of ``proposal``'s moves (all of them when
    ``max_moves`` is 0 or they are few enough), those reducing the imbalance most. ``previous``
    must only hold what each member may keep (its subscriptions)."""
    wanted = moves(previous, proposal)
    if max_moves <= 0 or len(wanted) <= max_moves:
        return Limited({m: frozenset(i) for m, i in proposal.items()}, len(wanted), 0)
    result = {m: set(items) for m, items in proposal.items()}
    by_pair: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for item, source, dest in wanted:
        result[dest].discard(item)
        result[source].add(item)
        by_pair[(source, dest)].append(item)
    for items in by_pair.values():
        items.sort(reverse=True)  # popped smallest first
    counts = {m: len(items) for m, items in result.items()}
    for _ in range(max_moves):
        source, dest = min(by_pair, key=lambda pair: (counts[pair[1]] - counts[pair[0]],
                                                      -counts[pair[0]], pair))
        items = by_pair[(source, dest)]
        item = items.pop()
        if not items:
            del by_pair[(source, dest)]
        result[source].discard(item)
        result[dest].add(item)
        counts[source] -= 1
        counts[dest] += 1
    return Limited({m: frozenset(i) for m, i in result.items()}, max_moves,
                   len(wanted) - max_moves)


def imbalance(assignment: Mapping[str, Items]) -> int:
    """The most items of a member minus the fewest (0 for no members)."""
    sizes = [len(items) for items in assignment.values()]
    return max(sizes) - min(sizes) if sizes else 0
