"""The release timer of deferred resolution's holds (``deferred``), for every group type: one
timer per group, at the earliest deadline of its holds; each type's ``holds`` module gives the
write event it runs (tombstone the holds that ended, bump the group epoch)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from coordinator.runtime import Result

from .deferred import Hold, next_deadline


def arm(shard: Any, key: Any, at_ms: int, fire: Callable[[Any, int], Result]) -> None:
    """The timer ``key`` at ``at_ms``, unless it fires earlier already."""
    armed = shard.timers.deadline(key)
    if armed is not None and armed <= at_ms:
        return
    shard.timers.cancel(key)
    shard.timers.schedule(key, at_ms, fire)


def ended(holds: Mapping[str, Hold], now_ms: int) -> tuple[list[Hold], int | None]:
    """(the holds whose delay ended, the earliest deadline of the others)."""
    return ([h for h in holds.values() if not h.active(now_ms)],
            next_deadline(h for h in holds.values() if h.active(now_ms)))


def rearm_on_load(groups: Iterable[Any], now_ms: int, arm_group: Callable[[str, int], None]
                  ) -> None:
    """After a load: ``arm_group(group id, when)`` for each group with holds, at its earliest
    deadline (at once for one that passed while the coordinator was down)."""
    for group in groups:
        at = next_deadline(group.held.values())
        if at is not None:
            arm_group(group.group_id, max(at, now_ms))
